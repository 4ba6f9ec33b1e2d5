"""ELECTRA's pretraining compute per example (pretrain.models.flops counts alike)."""
from pretrain.models import flops


def training_flops(config, seq_length, max_predictions, sentence_head=False,
                           span_boundary=False):
    """ELECTRA: the generator (embeddings_project, encoder, generator_predictions and the
    tied output layer at the `max_predictions` masked positions) and the discriminator
    (embeddings_project, encoder, discriminator_predictions at every token). It has no
    sentence or span heads; the flags are accepted for a common signature."""
    del sentence_head, span_boundary
    e, v, h = config.embedding_width, config.vocab_size, config.hidden_size
    generator, discriminator = config.generator_config(), config.discriminator_config()
    hg = generator.hidden_size
    generator_width = hg if config.untied_generator_embeddings else e
    forward = 0
    for network, width in ((generator, generator_width), (discriminator, e)):
        if width != network.hidden_size:
            forward += seq_length * 2 * width * network.hidden_size
        forward += flops.encoder_forward_flops(network.hidden_size, network.intermediate_size,
                                         network.num_hidden_layers, seq_length)
    forward += max_predictions * (2 * hg * generator_width + 2 * generator_width * v)
    forward += seq_length * (2 * h * h + 2 * h)       # dense, dense_1
    return 3 * forward
