"""Statistics, one implementation each, as pure functions (the core also runs in Lambda, where there
is no numpy or scipy):

- ``ranks``: average ranks, Spearman's rho, Kendall's tau-b, the AUC (Mann-Whitney);
- ``kappa``: Cohen's kappa of two yes/no raters, quadratic-weighted kappa on ordinal levels;
- ``bootstrap``: percentile-bootstrap intervals of a mean (resamples shared by samples of one size);
- ``ks``: the two-sample Kolmogorov-Smirnov test;
- ``cusum``: the one-sided downward CUSUM step.

This layer imports nothing of fmquality but ``domain`` (the result models it returns).
"""
