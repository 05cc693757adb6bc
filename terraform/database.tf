# RDS PostgreSQL in the private subnets: encrypted, not publicly accessible, its master
# password made and kept by AWS in Secrets Manager (never in this state or an output) and read
# by the database bootstrap function only (bootstrap.tf). That function gives the targets the
# role `showdown`, owner of the database `showdown`, and the guns' store the role `runs`, owner
# of `showdown_runs`; no host logs in as the master user. The roles log in with passwords of
# their own (an IAM token expires after 15 minutes, and the targets' pools reconnect): IAM
# authentication stays on but opens nothing, as no role is granted rds_iam.

resource "aws_db_subnet_group" "lab" {
  name       = "${var.name}-db"
  subnet_ids = aws_subnet.private[*].id
}

resource "aws_db_parameter_group" "lab" {
  name   = "${var.name}-pg${var.db_engine_version}"
  family = "postgres${var.db_engine_version}"

  # Statements that take over a second are logged, to see the database's share of a latency.
  parameter {
    name  = "log_min_duration_statement"
    value = "1000"
  }
  parameter {
    name  = "log_statement"
    value = "ddl"
  }
  # Every client must use TLS: the targets and the guns' store connect with verify-full.
  parameter {
    name  = "rds.force_ssl"
    value = "1"
  }
}

resource "aws_db_instance" "lab" {
  identifier                          = "${var.name}-db"
  engine                              = "postgres"
  engine_version                      = var.db_engine_version
  instance_class                      = var.db_instance_class
  allocated_storage                   = 20
  storage_type                        = "gp3"
  storage_encrypted                   = true
  username                            = "lab_admin"
  manage_master_user_password         = true
  db_subnet_group_name                = aws_db_subnet_group.lab.name
  parameter_group_name                = aws_db_parameter_group.lab.name
  vpc_security_group_ids              = [aws_security_group.db.id]
  publicly_accessible                 = false
  multi_az                            = false
  deletion_protection                 = false
  skip_final_snapshot                 = true
  backup_retention_period             = 1
  copy_tags_to_snapshot               = true
  auto_minor_version_upgrade          = true
  iam_database_authentication_enabled = true
  enabled_cloudwatch_logs_exports     = ["postgresql"]
  performance_insights_enabled        = true
  apply_immediately                   = true

  #checkov:skip=CKV_AWS_157:A lab database for hours of benchmarks: one zone is the write-up's setup, and Multi-AZ would double its cost.
  #checkov:skip=CKV_AWS_118:Enhanced monitoring needs a role and costs; the probe watches the API host, and RDS's own metrics remain.
  #checkov:skip=CKV_AWS_293:Deletion protection off on purpose: `terraform destroy` must remove a lab.
  #checkov:skip=CKV_AWS_354:Performance Insights with AWS's own key: a customer key would outlive the lab.
  #checkov:skip=CKV2_AWS_30:Query logging is set for statements over a second; logging every statement would skew a benchmark.
}
