"""ELECTRA's registry entry (pretrain.models.registry)."""
from pretrain.models.electra.config import ElectraConfig
from pretrain.models.family import MASKED_LM_HEAD, EvalHead, ModelFamily

DISCRIMINATOR_HEAD = EvalHead(
    "disc_accuracy", "disc_loss", "disc_majority_accuracy", "disc_label_entropy",
    "disc_num_tokens", "always answering 'original' (the original tokens' share)",
    "ELECTRA's discriminator learns once its generator's replacements are plausible; "
    "train longer (disc_auc above 0.5 shows it ranks replaced tokens higher before its "
    "answers change); it is what fine-tuning starts from, so do not fine-tune it yet",
    gates_finetuning=True, not_learned_cell="discriminator no better than always 'original'")

ELECTRA = ModelFamily(
    "electra", (), ElectraConfig, "pretrain.models.electra.modeling:ElectraDiscriminator",
    "pretrain.models.electra.pretraining:electra_pretraining_losses",
    "pretrain.models.electra.metrics:eval_metric_inputs", lambda config: "electra",
    "ELECTRA: generator MLM + replaced-token detection by the discriminator",
    eval_heads=(MASKED_LM_HEAD, DISCRIMINATOR_HEAD),
    logged_losses=("loss", "masked_lm_loss", "disc_loss"),
    hf_converter="pretrain.models.electra.hf:CONVERTER",
    sentence_and_span_heads=False,
    training_flops="pretrain.models.electra.flops:training_flops",
    vocab_extension_refusal="its generator and discriminator share the embedding table",
    # google-research/electra's names; the generator's own table only with
    # untied_generator_embeddings
    vocab_tables=("electra/embeddings/word_embeddings", "generator/embeddings/word_embeddings"),
    vocab_biases=("generator_predictions/output_bias",),
    checkpoint_scope_mappings=((
        "electra", "bert",
        "a BERT/RoBERTa checkpoint initialises the ELECTRA discriminator: its embeddings "
        "(shared with the generator) and encoder layers; the generator's encoder, "
        "generator_predictions and discriminator_predictions start fresh. The ELECTRA config "
        "needs the checkpoint's vocab_size, hidden_size, intermediate_size and "
        "num_attention_heads, and no embedding_size other than hidden_size"),))
FAMILIES = (ELECTRA,)
