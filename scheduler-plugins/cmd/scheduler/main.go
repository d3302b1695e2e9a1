// Command scheduler is kube-scheduler with the interference.orchestrator
// plugins registered: GPUScheduler, SpotScheduler, AZScheduler and
// InterferenceAware. Everything else (flags, config, metrics) is upstream.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as kube-scheduler offers
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as kube-scheduler registers them
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"interference.orchestrator/scheduler-plugins/pkg/gpu"
	"interference.orchestrator/scheduler-plugins/pkg/interference"
	"interference.orchestrator/scheduler-plugins/pkg/spot"
	"interference.orchestrator/scheduler-plugins/pkg/zone"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(gpu.Name, gpu.New),
		app.WithPlugin(spot.Name, spot.New),
		app.WithPlugin(zone.Name, zone.New),
		app.WithPlugin(interference.Name, interference.New),
	)
	os.Exit(cli.Run(command))
}
