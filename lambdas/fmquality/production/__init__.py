"""Production watch: capture of real shoppers' turns (redacted), stratified weekly samples, drift
statistics (CUSUM, Kolmogorov-Smirnov), a monitor status, and the human review queue that measures
the judge's agreement. Pure Python like the rest of the core: AWS clients are passed in."""
