"""`python -m data_gen.beam_pipeline`: the code lives in data_gen.runner.beam_pipeline."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from data_gen.runner.beam_pipeline import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
