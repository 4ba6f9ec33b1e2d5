"""`python -m data_gen.build_vocab`: the code lives in data_gen.tools.build_vocab."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from data_gen.tools.build_vocab import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
