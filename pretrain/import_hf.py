"""`python -m pretrain.import_hf`: the code lives in pretrain.interop.import_hf."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from pretrain.interop.import_hf import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
