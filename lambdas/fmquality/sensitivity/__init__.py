"""The sensitivity suite's perturbation operators: each turns an acceptable answer into a defective
one by construction, from the case's own evidence (docs/sensitivity.md). The operators read the dataset
format only, never the scoring code they measure."""
