"""`python -m data_gen.lcqmc_to_docs`: the code lives in data_gen.tools.lcqmc_to_docs."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from data_gen.tools.lcqmc_to_docs import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
