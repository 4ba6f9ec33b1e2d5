"""TF checkpoints: reading, writing, name-checked loading, the files beside them.

Of the other rooms, imports only pretrain.models.config.
"""
