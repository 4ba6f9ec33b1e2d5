"""`python -m common.model_configs`: the shipped configs' names and shapes."""
from common.model_configs import main

main()
