##@ Monitoring: the chart's alerts and dashboard
# make/monitoring.mk — tests of the chart's PrometheusRule and Grafana dashboard (charts/hyperstatic, monitoring.*):
# promtool check/test rules on what `helm template` renders, then every dashboard query and rule selector against
# a real Prometheus scraping the real server and the real manager binary on envtest (hack/monitoring, build tag
# monitoring). Prometheus and promtool are Debian's package, installed when missing.

MONITORING_MANAGER_BIN := $(BIN)/manager-monitoring-test

# prometheus comes from Debian (promtool is in the same package): install it when missing, refreshing the package
# lists only when the first attempt fails (a fresh machine has none).
.PHONY: prometheus-installed
prometheus-installed: ## Install Debian's prometheus (and promtool) when missing (monitoring-test needs them).
	@$(call apt-ensure,command -v prometheus && command -v promtool,prometheus)

# The manager is built here (not bin/manager, which operator-build owns) so that the test always runs this tree's.
.PHONY: monitoring-test
monitoring-test: envtest-assets server-build $(HELM) prometheus-installed ## The chart's alerts and dashboard: promtool check/test rules, every query against a real Prometheus scraping the real server and operator.
	@$(call progress,building the manager for the monitoring test)
	@CGO_ENABLED=0 go build -o $(MONITORING_MANAGER_BIN) ./cmd/manager
	@$(call progress,monitoring test: promtool and a real Prometheus, server and operator)
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" HELM="$(HELM)" PROMTOOL="$$(command -v promtool)" PROMETHEUS="$$(command -v prometheus)" \
	  HYPERSTATIC_SERVER_BIN="$(SERVER_BIN)" HYPERSTATIC_MANAGER_BIN="$(MONITORING_MANAGER_BIN)" \
	  go test -tags monitoring -count=1 ./hack/monitoring/
