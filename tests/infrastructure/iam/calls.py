"""What IAM authorizes for one AWS API call: (action, resource ARN, request context keys).

From the Service Authorization Reference, for the operations our handlers make (the recording names
them; an operation without a rule here fails the evaluation, so a new call must be modelled first):

  s3 GetObject / HeadObject       s3:GetObject on bucket/key; with a VersionId s3:GetObjectVersion
  s3 PutObject / multipart        s3:PutObject on bucket/key
  s3 CopyObject                   s3:GetObject(Version) on the source, s3:PutObject on the target
  s3 DeleteObject                 s3:DeleteObject
  s3 ListObjects(V2)              s3:ListBucket on the bucket, s3:prefix = the request's Prefix
  dynamodb item and query APIs    dynamodb:<Operation> on the table (Query on an index: table/index/<name>),
                                  dynamodb:LeadingKeys = the partition keys of the request
  ssm Get/PutParameter, GetParameterHistory   the same action on parameter/<name without its leading slash>
  events PutEvents                events:PutEvents on each entry's event bus
  cloudwatch PutMetricData        cloudwatch:PutMetricData on *, cloudwatch:namespace = Namespace
  bedrock-runtime Converse(Stream)/InvokeModel   bedrock:InvokeModel(WithResponseStream) on the model:
                                  an inference profile on the profile ARN AND on its foundation model in
                                  every region it routes to
  bedrock-agent GetPrompt         bedrock:GetPrompt on the prompt (and version) ARN
  states StartExecution           states:StartExecution on the state machine
  sqs SendMessage(Batch)...       sqs:<Operation> on the queue ARN (from its URL)
  sns Publish                     sns:Publish on the topic
  lambda Invoke                   lambda:InvokeFunction on the function (qualified when a qualifier is given)
  secretsmanager GetSecretValue   secretsmanager:GetSecretValue on the secret
  firehose PutRecord(Batch)       firehose:PutRecord(Batch) on the delivery stream
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from infra.bedrock_models import model_foundation_id, model_foundation_regions, model_is_inference_profile


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def key(self) -> tuple[str, str, str]:
        return self.action, self.resource, repr(sorted(self.context.items()))


class UnmodelledCall(LookupError):
    """An operation the evaluation has no IAM rule for: add one above before the code may make it."""


def _s3_object(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def _queue_arn(url: str, region: str, account: str) -> str:
    match = re.match(r"https://sqs\.([a-z0-9-]+)\.amazonaws\.com/(\d{12})/(.+)$", url)
    if not match:
        raise UnmodelledCall(f"queue URL {url!r}")
    return f"arn:aws:sqs:{match.group(1)}:{match.group(2)}:{match.group(3)}"


def model_arns(model_id: str, region: str, account: str) -> list[str]:
    if model_id.startswith("arn:"):
        return [model_id]
    arns = [f"arn:aws:bedrock:{r}::foundation-model/{model_foundation_id(model_id)}"
            for r in (model_foundation_regions(model_id, None) or (region,))]
    if model_is_inference_profile(model_id):
        arns.insert(0, f"arn:aws:bedrock:{region}:{account}:inference-profile/{model_id}")
    return arns


def requests_for(service: str, operation: str, params: dict[str, Any], *, region: str, account: str) -> list[Request]:
    """The IAM requests one call makes (see the module docstring)."""
    p = params
    if service == "s3":
        if operation in ("GetObject", "HeadObject"):
            action = "s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject"
            return [Request(action, _s3_object(p["Bucket"], p["Key"]))]
        if operation in ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
            return [Request("s3:PutObject", _s3_object(p["Bucket"], p["Key"]))]
        if operation == "DeleteObject":
            return [Request("s3:DeleteObject", _s3_object(p["Bucket"], p["Key"]))]
        if operation == "CopyObject":
            source = p["CopySource"] if isinstance(p["CopySource"], str) else f"{p['CopySource']['Bucket']}/{p['CopySource']['Key']}"
            return [Request("s3:GetObject", f"arn:aws:s3:::{source.split('?')[0]}"),
                    Request("s3:PutObject", _s3_object(p["Bucket"], p["Key"]))]
        if operation in ("ListObjectsV2", "ListObjects"):
            return [Request("s3:ListBucket", f"arn:aws:s3:::{p['Bucket']}", {"s3:prefix": p.get("Prefix", "")})]
    if service == "dynamodb":
        table = f"arn:aws:dynamodb:{region}:{account}:table/"
        keys = {"dynamodb:LeadingKeys": p["LeadingKeys"]} if p.get("LeadingKeys") else {}
        if operation in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"):
            resource = table + p["TableName"] + (f"/index/{p['IndexName']}" if p.get("IndexName") else "")
            return [Request(f"dynamodb:{operation}", resource, keys)]
        if operation in ("BatchWriteItem", "BatchGetItem"):
            return [Request(f"dynamodb:{operation}", table + t, keys) for t in p["Tables"]]
    if service == "ssm" and operation in ("GetParameter", "PutParameter", "GetParameterHistory"):
        return [Request(f"ssm:{operation}", f"arn:aws:ssm:{region}:{account}:parameter/{p['Name'].lstrip('/')}")]
    if service == "events" and operation == "PutEvents":
        return [Request("events:PutEvents", bus if bus.startswith("arn:") else
                        f"arn:aws:events:{region}:{account}:event-bus/{bus}") for bus in p["EventBusNames"]]
    if service == "cloudwatch" and operation == "PutMetricData":
        return [Request("cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": p["Namespace"]})]
    if service == "bedrock-runtime" and operation in ("Converse", "InvokeModel", "ConverseStream",
                                                      "InvokeModelWithResponseStream"):
        action = "bedrock:InvokeModelWithResponseStream" if "Stream" in operation else "bedrock:InvokeModel"
        return [Request(action, arn) for arn in model_arns(p["modelId"], region, account)]
    if service == "bedrock-agent" and operation == "GetPrompt":
        prompt = p["promptIdentifier"]
        if not prompt.startswith("arn:"):
            prompt = f"arn:aws:bedrock:{region}:{account}:prompt/{prompt}"
        return [Request("bedrock:GetPrompt", prompt + (f":{p['promptVersion']}" if p.get("promptVersion") else ""))]
    if service == "stepfunctions" and operation in ("StartExecution", "DescribeExecution"):
        return [Request(f"states:{operation}", p.get("stateMachineArn") or p["executionArn"])]
    if service == "sqs" and operation in ("SendMessage", "SendMessageBatch", "DeleteMessage", "ReceiveMessage",
                                          "ChangeMessageVisibility"):
        return [Request(f"sqs:{operation.removesuffix('Batch')}", _queue_arn(p["QueueUrl"], region, account))]
    if service == "sns" and operation == "Publish":
        return [Request("sns:Publish", p["TopicArn"])]
    if service == "lambda" and operation == "Invoke":
        name = p["FunctionName"]
        arn = name if name.startswith("arn:") else f"arn:aws:lambda:{region}:{account}:function:{name}"
        return [Request("lambda:InvokeFunction", arn + (f":{p['Qualifier']}" if p.get("Qualifier") else ""))]
    if service == "secretsmanager" and operation == "GetSecretValue":
        return [Request("secretsmanager:GetSecretValue", p["SecretId"])]
    if service == "firehose" and operation in ("PutRecord", "PutRecordBatch"):
        return [Request(f"firehose:{operation}",
                        f"arn:aws:firehose:{region}:{account}:deliverystream/{p['DeliveryStreamName']}")]
    raise UnmodelledCall(f"{service} {operation}")
