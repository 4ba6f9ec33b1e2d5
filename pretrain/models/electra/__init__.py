"""ELECTRA (replaced-token detection): a generator and a discriminator over the shared
encoder. `config.ElectraConfig`, `modeling.ElectraEncoder` (google-research/electra's
variable names) and `pretraining.electra_pretraining_losses` (the objective on
data_gen's masked records). Not yet in the model registry: run_pretraining's eval
metrics and learning check for it come first."""
