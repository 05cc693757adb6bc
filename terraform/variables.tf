variable "name" {
  type        = string
  description = "A name for this lab, prefixed to every resource (letters, digits and dashes)."
  default     = "showdown"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,20}$", var.name))
    error_message = "name: 2 to 21 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "region" {
  type        = string
  description = "The AWS region to build the lab in."
  default     = "us-east-1"
}

variable "zone_letters" {
  type        = list(string)
  description = "The two availability zones of the region to use, by their letter (us-east-1a, us-east-1b by default): named, so that the lab does not move when AWS adds a zone."
  default     = ["a", "b"]
  validation {
    condition     = length(var.zone_letters) == 2
    error_message = "Name exactly two zones: one for the hosts' subnets and the database's pair."
  }
}

variable "operator_cidr" {
  type        = string
  description = "The only network SSH is allowed from: your address as a /32 (curl -s https://checkip.amazonaws.com). No default: nothing is opened to the world by accident."

  validation {
    condition     = can(cidrhost(var.operator_cidr, 0)) && var.operator_cidr != "0.0.0.0/0"
    error_message = "operator_cidr must be a CIDR block such as 203.0.113.7/32, and not 0.0.0.0/0."
  }
}

variable "package_egress_cidrs" {
  type        = list(string)
  description = "Where the hosts may reach on ports 80 and 443 to install packages and the toolchains (Debian, crates.io, npm, the Go proxy). Narrow it to your mirrors if you have them."
  default     = ["0.0.0.0/0"]
}

variable "vpc_cidr" {
  type        = string
  description = "The lab's VPC address range."
  default     = "10.42.0.0/16"
}

variable "api_instance_type" {
  type        = string
  description = "The API host's instance type: t3.micro is 2 vCPUs burstable and 1 GiB, like the showdown write-up's host; t2.micro is 1 vCPU and 1 GiB."
  default     = "t3.micro"
}

variable "gun_instance_type" {
  type        = string
  description = "Each gun host's instance type (4 vCPUs and 16 GiB by default: the gun must not be the bottleneck)."
  default     = "t3.xlarge"
}

variable "gun_count" {
  type        = number
  description = "How many gun hosts; with more than one, each runs a shard of the same run group into the shared store."
  default     = 1

  validation {
    condition     = var.gun_count >= 1 && var.gun_count <= 16
    error_message = "gun_count must be between 1 and 16."
  }
}

variable "db_instance_class" {
  type        = string
  description = "The RDS PostgreSQL instance class (the smallest by default)."
  default     = "db.t4g.micro"
}

variable "db_engine_version" {
  type        = string
  description = "The PostgreSQL major version of the RDS instance."
  default     = "15"
}

variable "api_port" {
  type        = number
  description = "The port the targets listen on."
  default     = 8080
}

variable "probe_port" {
  type        = number
  description = "The port the probe serves its samples on (TLS, with a token)."
  default     = 7700
}

variable "target" {
  type        = string
  description = "The target the API host runs at boot: node, node-cluster, go, go-goroutine or rust (the experiment files can start others)."
  default     = "go"

  validation {
    condition     = contains(["node", "node-cluster", "go", "go-goroutine", "rust"], var.target)
    error_message = "target must be one of node, node-cluster, go, go-goroutine, rust."
  }
}

variable "showdown_repository" {
  type        = string
  description = "The Git repository each host builds Showdown from (building takes a few GiB of memory: the API host gets swap for it)."
  default     = "https://github.com/showdown-bench/showdown.git"
}

variable "showdown_revision" {
  type        = string
  description = "The revision (commit, tag or branch) of the repository to build."
  default     = "main"
}

variable "ssh_public_key" {
  type        = string
  description = "An SSH public key (one line) for the admin user of every host."
}

variable "ami_name_filter" {
  type        = string
  description = "The name filter of the AMI the hosts run (Debian 12 by default, from Debian's own account)."
  default     = "debian-12-amd64-*"
}

variable "ami_owner" {
  type        = string
  description = "The AWS account that publishes the AMI (136693071363: Debian)."
  default     = "136693071363"
}
