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

variable "extra_egress_domains" {
  type        = list(string)
  description = "More names the lab's proxy lets the hosts fetch from, besides those cloud-init needs (a package mirror, say), as Squid dstdomain entries: .example.com for a domain and its subdomains."
  default     = []

  validation {
    condition     = alltrue([for d in var.extra_egress_domains : can(regex("^\\.?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$", d))])
    error_message = "extra_egress_domains: DNS names such as mirror.example.com or .example.com."
  }
}

variable "proxy_instance_type" {
  type        = string
  description = "The egress proxy's instance type: it only forwards the hosts' downloads at setup."
  default     = "t3.nano"
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
  description = "The Git repository each host builds Showdown from, over HTTPS: the repository you keep Showdown in (Showdown publishes no release yet, so there is no default). The proxy lets its host through; building takes a few GiB of memory: the API host gets swap for it."

  validation {
    condition     = can(regex("^https://[^/:@]+/", var.showdown_repository))
    error_message = "showdown_repository: an https:// URL (the hosts reach the internet through the lab's HTTP proxy only)."
  }
}

variable "showdown_revision" {
  type        = string
  description = "The revision (commit, tag or branch) of the repository to build: a full commit id pins the source, which Git verifies by its hashes."
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

variable "probe_certificate_days" {
  type        = number
  description = "How long the probe's self-signed certificate is valid. A `terraform apply` in its last 30 days makes a new one and rebuilds the hosts with it; nothing renews it without an apply."
  default     = 365

  validation {
    condition     = var.probe_certificate_days >= 60 && var.probe_certificate_days <= 825
    error_message = "probe_certificate_days must be between 60 (more than the 30 days of early renewal) and 825."
  }
}

variable "rds_ca_bundle_sha256" {
  type        = string
  description = "The SHA-256 of the RDS CA bundle (https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem) that the hosts and the database bootstrap trust. AWS adds CAs to the bundle now and then: the plan then stops and prints the new digest, to review and pass here."
  default     = "e5bb2084ccf45087bda1c9bffdea0eb15ee67f0b91646106e466714f9de3c7e3"

  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.rds_ca_bundle_sha256))
    error_message = "rds_ca_bundle_sha256: 64 lowercase hexadecimal digits."
  }
}
