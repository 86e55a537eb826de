output "namespace" {
  description = "Namespace recallmesh runs in."
  value       = kubernetes_namespace_v1.recallmesh.metadata[0].name
}

output "application_name" {
  description = "The Argo CD Application that deploys the overlay."
  value       = kubernetes_manifest.application.manifest.metadata.name
}

output "gateway_address" {
  description = "In-cluster gRPC address of the gateway (recallmesh.v1.MemoryService)."
  value       = "recallmesh-gateway.${kubernetes_namespace_v1.recallmesh.metadata[0].name}.svc.cluster.local:50051"
}

output "database_secret" {
  description = "Secret CloudNativePG writes for the app database (key uri: the libpq URI)."
  value       = "recallmesh-db-app"
}

output "chart_versions" {
  description = "Chart versions installed."
  value = {
    cert_manager          = var.install_cert_manager ? var.cert_manager_chart_version : null
    cloudnative_pg        = var.install_cloudnative_pg ? var.cloudnative_pg_chart_version : null
    plugin_barman_cloud   = var.install_cloudnative_pg && var.install_backup_plugin ? var.backup_plugin_chart_version : null
    kube_prometheus_stack = var.install_kube_prometheus_stack ? var.kube_prometheus_stack_chart_version : null
  }
}
