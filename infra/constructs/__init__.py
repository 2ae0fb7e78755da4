"""The evaluation stack's constructs, one module per concern, and the helpers they share.

Where to change what:
  a Lambda function       evaluation_functions.py (one method per function; its role, handler and
                          placeholder in statemachines/evaluation.functions.json); the production
                          watch's functions in production_watch.py. All are built by
                          function_kit.FunctionKit.function (code, layers, log group, role).
  a grant                 the statements list of that function's method (policies.statement; table
                          grants with Storage.table_statement and a partition prefix from storage.py);
                          a wildcard resource also needs its reason in that module's
                          _acknowledge_nag_findings (nag.py).
  an alarm                monitoring.py, the method of its group (run quality, run, executions,
                          functions, judge), built by alarms.AlarmBook; production_watch.py for drift
                          and judge agreement; dead_letters.py gives every dead-letter queue one.
  a dashboard widget      monitoring.py, one method per row; production_watch.py adds its rows.
  a trigger (rule)        triggers.py.
  a configuration key     infra/config.py, then the construct that reads it.

Shared helpers: policies.py (IAM statements), metrics.py (namespace, metrics, the PutMetricData grant),
alarms.py (the two kinds of alarm), nag.py (cdk-nag acknowledgments and finding ids), storage.py's
private_bucket (what every bucket has).
"""
