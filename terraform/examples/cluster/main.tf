# A root configuration that runs the recallmesh module against the cluster of a kubeconfig
# context: terraform init && terraform apply -var kube_context=<context>.
terraform {
  required_version = ">= 1.6.0"

  required_providers {
    helm = {
      source  = "hashicorp/helm"
      version = "3.1.1"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "3.1.0"
    }
  }
}

variable "kube_context" {
  description = "kubeconfig context of the target cluster."
  type        = string
}

variable "kubeconfig" {
  description = "Path of the kubeconfig file."
  type        = string
  default     = "~/.kube/config"
}

variable "image" {
  description = "recallmesh image by digest (empty: the overlay's pin)."
  type        = string
  default     = ""
}

provider "kubernetes" {
  config_path    = var.kubeconfig
  config_context = var.kube_context
}

provider "helm" {
  kubernetes = {
    config_path    = var.kubeconfig
    config_context = var.kube_context
  }
}

module "recallmesh" {
  source  = "../.."
  overlay = "production"
  image   = var.image
}

output "gateway_address" {
  value = module.recallmesh.gateway_address
}
