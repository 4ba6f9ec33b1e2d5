"""BERT/RoBERTa and ALBERT (Google's and brightmart's layouts): `config.BertConfig`,
`modeling.BertModel` / `AlbertModel` over the shared encoder, `pretraining` (masked LM,
NSP/SOP, SpanBERT's span boundary objective in `span_boundary`); registered as model_type
"bert" (alias "roberta") and "albert" in `pretrain.models.registry`."""
