"""`python -m pretrain.export_saved_model`: the code lives in pretrain.interop.export_saved_model."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from pretrain.interop.export_saved_model import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
