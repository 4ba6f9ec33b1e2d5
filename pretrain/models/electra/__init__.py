"""ELECTRA (replaced-token detection): a generator and a discriminator over the shared
encoder. `config.ElectraConfig`, `modeling.ElectraEncoder` / `ElectraDiscriminator`
(google-research/electra's variable names) and `pretraining.electra_pretraining_losses`
(the objective on data_gen's masked records); registered as model_type "electra" in
`pretrain.models.registry`."""
