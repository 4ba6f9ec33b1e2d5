"""Commands beside the main one: vocab building, similar words for MacBERT, LCQMC to
documents, record inspection."""
