# recallmesh's platform on a Kubernetes cluster: cert-manager (the production overlays' TLS
# certificates, the Barman Cloud plugin's), the CloudNativePG operator (and its Barman Cloud
# backup plugin), kube-prometheus-stack, the recallmesh namespace, and the Argo CD Application
# that deploys one k8s/overlays/<overlay>. Argo CD itself is a prerequisite (its Application CRD
# must exist when this is planned). Providers are configured by the caller
# (see examples/cluster).

locals {
  labels = {
    "app.kubernetes.io/part-of"    = "recallmesh"
    "app.kubernetes.io/managed-by" = "terraform"
  }
  kustomize_images = var.image == "" ? [] : ["recallmesh=${var.image}"]
  # the overlays leave storageClass unset (the cluster default); a kustomize patch sets it
  storage_class_patches = var.storage_class == null ? [] : [{
    target = { kind = "Cluster", name = "recallmesh-db" }
    patch = yamlencode([{
      op    = "add"
      path  = "/spec/storage/storageClass"
      value = var.storage_class
    }])
  }]
}

resource "kubernetes_namespace_v1" "cert_manager" {
  count = var.install_cert_manager ? 1 : 0
  metadata {
    name   = var.cert_manager_namespace
    labels = local.labels
  }
}

resource "kubernetes_namespace_v1" "cnpg" {
  count = var.install_cloudnative_pg ? 1 : 0
  metadata {
    name   = var.cnpg_namespace
    labels = local.labels
  }
}

resource "kubernetes_namespace_v1" "monitoring" {
  count = var.install_kube_prometheus_stack ? 1 : 0
  metadata {
    name   = var.monitoring_namespace
    labels = local.labels
  }
}

resource "kubernetes_namespace_v1" "recallmesh" {
  metadata {
    name = var.namespace
    labels = merge(local.labels, {
      "pod-security.kubernetes.io/enforce"         = "restricted"
      "pod-security.kubernetes.io/enforce-version" = "v1.33"
    })
  }
  # Argo CD also applies the overlay's Namespace object and adds its tracking annotation
  lifecycle {
    ignore_changes = [metadata[0].annotations]
  }
}

# cert-manager and its CRDs (Certificate, Issuer: k8s/components/tls)
resource "helm_release" "cert_manager" {
  count      = var.install_cert_manager ? 1 : 0
  name       = "cert-manager"
  repository = "https://charts.jetstack.io"
  chart      = "cert-manager"
  version    = var.cert_manager_chart_version
  namespace  = kubernetes_namespace_v1.cert_manager[0].metadata[0].name
  atomic     = true
  timeout    = 600
  values = [yamlencode({
    crds = { enabled = true, keep = true }
  })]
}

resource "helm_release" "cloudnative_pg" {
  count      = var.install_cloudnative_pg ? 1 : 0
  name       = "cnpg"
  repository = "https://cloudnative-pg.github.io/charts"
  chart      = "cloudnative-pg"
  version    = var.cloudnative_pg_chart_version
  namespace  = kubernetes_namespace_v1.cnpg[0].metadata[0].name
  atomic     = true
  timeout    = 600
}

resource "helm_release" "backup_plugin" {
  count      = var.install_cloudnative_pg && var.install_backup_plugin ? 1 : 0
  name       = "barman-cloud"
  repository = "https://cloudnative-pg.github.io/charts"
  chart      = "plugin-barman-cloud"
  version    = var.backup_plugin_chart_version
  namespace  = kubernetes_namespace_v1.cnpg[0].metadata[0].name
  atomic     = true
  timeout    = 600
  depends_on = [helm_release.cloudnative_pg, helm_release.cert_manager]
}

resource "helm_release" "kube_prometheus_stack" {
  count      = var.install_kube_prometheus_stack ? 1 : 0
  name       = "kube-prometheus-stack"
  repository = "https://prometheus-community.github.io/helm-charts"
  chart      = "kube-prometheus-stack"
  version    = var.kube_prometheus_stack_chart_version
  namespace  = kubernetes_namespace_v1.monitoring[0].metadata[0].name
  atomic     = true
  timeout    = 900
  values = [yamlencode({
    prometheus = {
      prometheusSpec = {
        # select PodMonitors and PrometheusRules in every namespace, not only the release's
        podMonitorSelectorNilUsesHelmValues     = false
        ruleSelectorNilUsesHelmValues           = false
        serviceMonitorSelectorNilUsesHelmValues = false
      }
    }
    grafana = {
      sidecar = {
        dashboards = {
          enabled         = true
          label           = "grafana_dashboard"
          labelValue      = "1"
          searchNamespace = "ALL"
        }
      }
    }
  })]
}

resource "kubernetes_manifest" "application" {
  manifest = {
    apiVersion = "argoproj.io/v1alpha1"
    kind       = "Application"
    metadata = {
      name      = "recallmesh-${var.overlay}"
      namespace = var.argocd_namespace
      labels    = local.labels
      finalizers = ["resources-finalizer.argocd.argoproj.io"]
    }
    spec = {
      project = "default"
      source = {
        repoURL        = var.repo_url
        targetRevision = var.target_revision
        path           = "k8s/overlays/${var.overlay}"
        kustomize = {
          images  = local.kustomize_images
          patches = local.storage_class_patches
        }
      }
      destination = {
        server    = "https://kubernetes.default.svc"
        namespace = kubernetes_namespace_v1.recallmesh.metadata[0].name
      }
      syncPolicy = {
        automated   = { prune = true, selfHeal = var.overlay == "dev" }
        syncOptions = ["ServerSideApply=true", "RespectIgnoreDifferences=true"]
        retry = {
          limit   = 5
          backoff = { duration = "10s", factor = 2, maxDuration = "5m" }
        }
      }
      ignoreDifferences = [{
        group        = "apps"
        kind         = "Deployment"
        jsonPointers = ["/spec/replicas"]
      }]
    }
  }
  depends_on = [
    helm_release.cert_manager,
    helm_release.cloudnative_pg,
    helm_release.backup_plugin,
    helm_release.kube_prometheus_stack,
  ]
}
