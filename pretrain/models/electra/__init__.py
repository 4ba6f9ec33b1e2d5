"""ELECTRA (replaced-token detection): a generator and a discriminator over the shared
encoder. So far its config (`pretrain.models.electra.config`); the model and its
registry entry follow."""
