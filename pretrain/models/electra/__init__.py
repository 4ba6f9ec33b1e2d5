"""ELECTRA (replaced-token detection): a generator and a discriminator over the shared
encoder. So far its config (`config`) and its two networks (`modeling.ElectraEncoder`,
google-research/electra's variable names); the pretraining objective and the registry
entry follow."""
