# A VPC with a public and a private subnet in each of two availability zones. The hosts sit in
# the public subnets (the operator reaches them by SSH; their security groups let them out only
# to the lab's proxy, the database and the Secrets Manager endpoint); the database, the
# bootstrap function and the endpoint sit in the private ones, with no route to the internet.

data "aws_availability_zones" "available" {
  state = "available"
  filter {
    name   = "zone-name"
    values = [for letter in var.zone_letters : "${var.region}${letter}"]
  }
}

locals {
  zones = slice(data.aws_availability_zones.available.names, 0, 2)
}

resource "aws_vpc" "lab" {
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true

  tags = { Name = "${var.name}-vpc" }
}

# The VPC's default security group admits nothing: every host uses the groups below.
resource "aws_default_security_group" "closed" {
  vpc_id = aws_vpc.lab.id

  tags = { Name = "${var.name}-default-closed" }
}

# Rejected and accepted flows are logged, to see what the rules let through.
resource "aws_flow_log" "lab" {
  vpc_id               = aws_vpc.lab.id
  traffic_type         = "ALL"
  log_destination_type = "cloud-watch-logs"
  log_destination      = aws_cloudwatch_log_group.flows.arn
  iam_role_arn         = aws_iam_role.flow_logs.arn
}

resource "aws_cloudwatch_log_group" "flows" {
  name              = "/${var.name}/vpc-flows"
  retention_in_days = 7
  #checkov:skip=CKV_AWS_158:A lab's flow logs: CloudWatch's own encryption suffices; a KMS key would outlive the lab.
  #checkov:skip=CKV_AWS_338:A lab lives for hours: a week of flow logs is enough.
}

resource "aws_internet_gateway" "lab" {
  vpc_id = aws_vpc.lab.id

  tags = { Name = "${var.name}-igw" }
}

resource "aws_subnet" "public" {
  count             = 2
  vpc_id            = aws_vpc.lab.id
  availability_zone = local.zones[count.index]
  cidr_block        = cidrsubnet(var.vpc_cidr, 8, count.index)
  # Addresses come from the instances' own settings, not from the subnet for everything.
  map_public_ip_on_launch = false

  tags = { Name = "${var.name}-public-${count.index}" }
}

resource "aws_subnet" "private" {
  count             = 2
  vpc_id            = aws_vpc.lab.id
  availability_zone = local.zones[count.index]
  cidr_block        = cidrsubnet(var.vpc_cidr, 8, 100 + count.index)

  tags = { Name = "${var.name}-private-${count.index}" }
}

resource "aws_route_table" "public" {
  vpc_id = aws_vpc.lab.id

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.lab.id
  }

  tags = { Name = "${var.name}-public" }
}

resource "aws_route_table_association" "public" {
  count          = 2
  subnet_id      = aws_subnet.public[count.index].id
  route_table_id = aws_route_table.public.id
}

# The private subnets keep the VPC's main route table: local traffic only.

# Secrets Manager inside the VPC: the hosts and the bootstrap function read their secrets
# without a way to the internet. Its policy admits the lab's three roles reading the lab's
# secrets only, so that the endpoint cannot carry anything to another account's.
resource "aws_vpc_endpoint" "secretsmanager" {
  vpc_id              = aws_vpc.lab.id
  service_name        = "com.amazonaws.${var.region}.secretsmanager"
  vpc_endpoint_type   = "Interface"
  subnet_ids          = [aws_subnet.private[0].id]
  security_group_ids  = [aws_security_group.secrets.id]
  private_dns_enabled = true
  policy              = data.aws_iam_policy_document.secrets_endpoint.json

  tags = { Name = "${var.name}-secretsmanager" }
}

data "aws_iam_policy_document" "secrets_endpoint" {
  statement {
    sid     = "ReadTheLabsSecretsOnly"
    actions = ["secretsmanager:GetSecretValue"]
    principals {
      type        = "AWS"
      identifiers = [aws_iam_role.api.arn, aws_iam_role.gun.arn, aws_iam_role.db_bootstrap.arn]
    }
    resources = [
      aws_db_instance.lab.master_user_secret[0].secret_arn,
      aws_secretsmanager_secret.probe_token.arn,
      aws_secretsmanager_secret.probe_tls_key.arn,
      aws_secretsmanager_secret.db_targets.arn,
      aws_secretsmanager_secret.db_runs.arn,
    ]
  }
}
