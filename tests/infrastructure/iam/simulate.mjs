// Evaluates IAM requests with @cloud-copilot/iam-simulate (pinned in package.json): one process for a batch.
// stdin: {"requests": [{"id", "principal", "action", "resource", "account", "context": {...},
//          "policies": [{"name", "policy"}], "resourcePolicy": <the bucket's, key's, queue's or topic's, or null>}]}
// stdout: {"results": [{"id", "decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied" | "Error",
//          "errors": <validation errors or null>}]}
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const { requests } = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const results = []
for (const r of requests) {
  const simulation = {
    request: {
      principal: r.principal,
      action: r.action,
      resource: { resource: r.resource, accountId: r.account },
      contextVariables: r.context || {},
    },
    identityPolicies: r.policies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
  }
  if (r.resourcePolicy) simulation.resourcePolicy = r.resourcePolicy
  const response = await runSimulation(simulation, {})
  if (response.resultType === 'error') {
    results.push({ id: r.id, decision: 'Error', errors: response.errors })
  } else {
    results.push({ id: r.id, decision: response.overallResult, errors: null })
  }
}
process.stdout.write(JSON.stringify({ results }))
