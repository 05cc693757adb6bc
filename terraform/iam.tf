# A role per kind of host, each reading its own secrets and nothing else (secrets.tf):
#
#   API host  the probe's token and TLS key, the targets' database role
#   gun       the probe's token, the runs' store role
#
# Neither reads the RDS master secret: only the database bootstrap function does (bootstrap.tf).

data "aws_iam_policy_document" "ec2_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "api_secrets" {
  statement {
    sid     = "ReadTheApiHostsSecretsOnly"
    actions = ["secretsmanager:GetSecretValue"]
    resources = [
      aws_secretsmanager_secret.probe_token.arn,
      aws_secretsmanager_secret.probe_tls_key.arn,
      aws_secretsmanager_secret.db_targets.arn,
    ]
  }
}

data "aws_iam_policy_document" "gun_secrets" {
  statement {
    sid     = "ReadTheGunsSecretsOnly"
    actions = ["secretsmanager:GetSecretValue"]
    resources = [
      aws_secretsmanager_secret.probe_token.arn,
      aws_secretsmanager_secret.db_runs.arn,
    ]
  }
}

resource "aws_iam_role" "api" {
  name               = "${var.name}-api"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy" "api_secrets" {
  name   = "read-api-secrets"
  role   = aws_iam_role.api.id
  policy = data.aws_iam_policy_document.api_secrets.json
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
  name   = "read-gun-secrets"
  role   = aws_iam_role.gun.id
  policy = data.aws_iam_policy_document.gun_secrets.json
}

resource "aws_iam_instance_profile" "gun" {
  name = "${var.name}-gun"
  role = aws_iam_role.gun.name
}

# The database bootstrap function: the master secret, to create the roles, and the two roles'
# secrets, to give them their passwords; its network interfaces through AWS's managed policy.
data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "db_bootstrap_secrets" {
  statement {
    sid     = "ReadTheMasterAndTheRolesSecretsOnly"
    actions = ["secretsmanager:GetSecretValue"]
    resources = [
      aws_db_instance.lab.master_user_secret[0].secret_arn,
      aws_secretsmanager_secret.db_targets.arn,
      aws_secretsmanager_secret.db_runs.arn,
    ]
  }
}

resource "aws_iam_role" "db_bootstrap" {
  name               = "${var.name}-db-bootstrap"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "db_bootstrap_secrets" {
  name   = "read-bootstrap-secrets"
  role   = aws_iam_role.db_bootstrap.id
  policy = data.aws_iam_policy_document.db_bootstrap_secrets.json
}

resource "aws_iam_role_policy_attachment" "db_bootstrap_vpc" {
  role       = aws_iam_role.db_bootstrap.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
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
