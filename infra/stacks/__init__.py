"""The app's two stacks: EvaluationStack (the gate, composed of infra.constructs) and PipelineStack (an
example release pipeline that uses the gate's CodePipeline action)."""
