variable "overlay" {
  description = "Which kustomize overlay of k8s/overlays the Argo CD Application deploys."
  type        = string
  default     = "production"

  validation {
    condition     = contains(["dev", "production", "production-gpu"], var.overlay)
    error_message = "overlay must be dev, production or production-gpu."
  }
}

variable "namespace" {
  description = "Namespace recallmesh runs in. Must match the overlay's `namespace:` (recallmesh-dev for dev, recallmesh otherwise)."
  type        = string
  default     = "recallmesh"
}

variable "image" {
  description = "The recallmesh image, by digest (registry/recallmesh@sha256:...). Passed to the Application as a kustomize image override; empty keeps the overlay's pin."
  type        = string
  default     = ""

  validation {
    condition     = var.image == "" || can(regex("@sha256:[0-9a-f]{64}$", var.image))
    error_message = "image must be pinned by digest: <registry>/recallmesh[:tag]@sha256:<64 hex>."
  }
}

variable "storage_class" {
  description = "StorageClass for the PostgreSQL volumes (null: the cluster's default)."
  type        = string
  default     = null
}

variable "repo_url" {
  description = "Git repository Argo CD syncs the overlay from."
  type        = string
  default     = "https://github.com/recallmesh/recallmesh.git"
}

variable "target_revision" {
  description = "Git revision (branch, tag or commit) Argo CD syncs."
  type        = string
  default     = "main"
}

variable "argocd_namespace" {
  description = "Namespace of an existing Argo CD installation (its Application CRD must exist before plan)."
  type        = string
  default     = "argocd"
}

variable "install_cert_manager" {
  description = "Install cert-manager (chart cert-manager, CRDs included): the production overlays' TLS certificates (k8s/components/tls) and the Barman Cloud Plugin need it. false: it is already in the cluster."
  type        = bool
  default     = true
}

variable "cert_manager_namespace" {
  description = "Namespace of cert-manager."
  type        = string
  default     = "cert-manager"
}

variable "cert_manager_chart_version" {
  description = "cert-manager chart version (v1.21.1; Jetstack's chart versions carry the v). tests/deploy/schemas/ vendors the same release's CRDs."
  type        = string
  default     = "v1.21.1"
}

variable "install_cloudnative_pg" {
  description = "Install the CloudNativePG operator (chart cloudnative-pg)."
  type        = bool
  default     = true
}

variable "install_backup_plugin" {
  description = "Install the Barman Cloud Plugin for CloudNativePG (production backups). Needs cert-manager (install_cert_manager, or already in the cluster)."
  type        = bool
  default     = true
}

variable "install_kube_prometheus_stack" {
  description = "Install kube-prometheus-stack (Prometheus operator, Prometheus, Alertmanager, Grafana, kube-state-metrics)."
  type        = bool
  default     = true
}

variable "cnpg_namespace" {
  description = "Namespace of the CloudNativePG operator (the overlays' NetworkPolicies expect cnpg-system)."
  type        = string
  default     = "cnpg-system"
}

variable "monitoring_namespace" {
  description = "Namespace of kube-prometheus-stack (the overlays' NetworkPolicies expect monitoring)."
  type        = string
  default     = "monitoring"
}

variable "cloudnative_pg_chart_version" {
  description = "cloudnative-pg chart version (0.29.0 = operator 1.30.0)."
  type        = string
  default     = "0.29.0"
}

variable "backup_plugin_chart_version" {
  description = "plugin-barman-cloud chart version (0.7.0 = plugin v0.13.0)."
  type        = string
  default     = "0.7.0"
}

variable "kube_prometheus_stack_chart_version" {
  description = "kube-prometheus-stack chart version (88.5.3 = prometheus-operator v0.93.1)."
  type        = string
  default     = "88.5.3"
}
