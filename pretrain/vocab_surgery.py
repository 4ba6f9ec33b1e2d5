"""`python -m pretrain.vocab_surgery`: the code lives in pretrain.checkpoints.vocab_surgery."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from pretrain.checkpoints.vocab_surgery import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
