"""The CI gate (`stallscope check`): a policy (policy.py, TOML), its evaluation on an analysed
capture (rules.py, a pure function), a previous run as baseline (baseline.py), the inputs named
(inputs.py), and the outputs CI systems read: JSON (document.py), JUnit XML (junit.py), a Markdown
or terminal summary (summary.py), GitHub annotations (annotations.py). docs/check.md describes
the policy keys, the rules and every output."""
