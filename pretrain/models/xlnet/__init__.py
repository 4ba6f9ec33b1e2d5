"""XLNet: permutation language modelling with two-stream relative attention (in progress, #29)."""
