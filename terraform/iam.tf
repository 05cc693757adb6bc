# Instance roles: the API host may read the RDS master secret and the probe's secret, nothing
# else; a gun may read the probe's secret (its token) and the RDS master secret (for its store
# of runs), nothing else.

data "aws_iam_policy_document" "ec2_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "read_lab_secrets" {
  statement {
    sid     = "ReadTheLabsSecretsOnly"
    actions = ["secretsmanager:GetSecretValue"]
    resources = [
      aws_db_instance.lab.master_user_secret[0].secret_arn,
      aws_secretsmanager_secret.probe.arn,
    ]
  }
}

resource "aws_iam_role" "api" {
  name               = "${var.name}-api"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy" "api_secrets" {
  name   = "read-lab-secrets"
  role   = aws_iam_role.api.id
  policy = data.aws_iam_policy_document.read_lab_secrets.json
}

resource "aws_iam_instance_profile" "api" {
  name = "${var.name}-api"
  role = aws_iam_role.api.name
}

resource "aws_iam_role" "gun" {
  name               = "${var.name}-gun"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy" "gun_secrets" {
  name   = "read-lab-secrets"
  role   = aws_iam_role.gun.id
  policy = data.aws_iam_policy_document.read_lab_secrets.json
}

resource "aws_iam_instance_profile" "gun" {
  name = "${var.name}-gun"
  role = aws_iam_role.gun.name
}

# VPC flow logs write to CloudWatch through this role.
data "aws_iam_policy_document" "flow_logs_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["vpc-flow-logs.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "flow_logs" {
  statement {
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]
    resources = ["${aws_cloudwatch_log_group.flows.arn}:*"]
  }
}

resource "aws_iam_role" "flow_logs" {
  name               = "${var.name}-flow-logs"
  assume_role_policy = data.aws_iam_policy_document.flow_logs_assume.json
}

resource "aws_iam_role_policy" "flow_logs" {
  name   = "write-flow-logs"
  role   = aws_iam_role.flow_logs.id
  policy = data.aws_iam_policy_document.flow_logs.json
}
