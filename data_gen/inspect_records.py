"""`python -m data_gen.inspect_records`: the code lives in data_gen.tools.inspect_records."""
# With its __doc__, which absl's --help prints as the usage of the __main__ module.
from data_gen.tools.inspect_records import __doc__, main  # noqa: F401

if __name__ == "__main__":
    main()
