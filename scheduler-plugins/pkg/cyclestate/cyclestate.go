// Package cyclestate keeps what a plugin's PreFilter or PreScore works out
// for the pod in the scheduling cycle's state, under the plugin's name, for
// its Filter or Score to read.
package cyclestate

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// Write stores the plugin's data for this cycle.
func Write(cycle fwk.CycleState, plugin string, data fwk.StateData) {
	cycle.Write(fwk.StateKey(plugin), data)
}

// Read returns what Write stored for the plugin in this cycle. Nothing
// stored (the extension point that writes it did not run) is an error status
// naming the plugin: `<plugin>: reading cycle state: not found`.
func Read[T fwk.StateData](cycle fwk.CycleState, plugin string) (T, *fwk.Status) {
	data, err := cycle.Read(fwk.StateKey(plugin))
	if err != nil {
		var zero T
		return zero, fwk.AsStatus(fmt.Errorf("%s: reading cycle state: %w", plugin, err))
	}
	return data.(T), nil
}
