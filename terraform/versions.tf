# The Showdown lab on AWS: an API host (the targets and the probe), gun hosts (loadgen) and an
# RDS PostgreSQL, in a VPC of its own. Plain resources only, no registry modules, so that every
# rule is in view. Works with Terraform >= 1.6 and OpenTofu.
terraform {
  required_version = ">= 1.6"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.31, < 7.0"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5, < 4.0"
    }
    tls = {
      source  = "hashicorp/tls"
      version = ">= 4.0, < 5.0"
    }
    # The database bootstrap function's package, and the RDS CA bundle it trusts.
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4, < 3.0"
    }
    http = {
      source  = "hashicorp/http"
      version = ">= 3.4, < 4.0"
    }
  }
}

provider "aws" {
  region = var.region

  default_tags {
    tags = {
      Project = "showdown"
      Lab     = var.name
    }
  }
}
