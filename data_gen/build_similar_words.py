"""`python -m data_gen.build_similar_words`: the code lives in data_gen.tools.build_similar_words."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from data_gen.tools.build_similar_words import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
