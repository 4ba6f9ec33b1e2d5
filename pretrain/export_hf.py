"""`python -m pretrain.export_hf`: the code lives in pretrain.interop.export_hf."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from pretrain.interop.export_hf import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
