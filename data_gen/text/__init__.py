"""Text in: corpus reading, document splitting, jieba segmentation, WordPiece and
sentencepiece tokenizers, vocab building and vocab-gap reports. Knows no data mode."""
