// Package deletions lets a plugin forget what it remembers about pods and
// nodes once the scheduler's own informers see them deleted.
package deletions

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Pods calls forget with every pod the scheduler's pod informer sees
// deleted. Without a handle or an informer factory (unit tests) it does
// nothing. The error names the plugin.
func Pods(plugin string, handle framework.Handle, forget func(*v1.Pod)) error {
	if !hasInformers(handle) {
		return nil
	}
	if err := watch(handle.SharedInformerFactory().Core().V1().Pods().Informer(), forget); err != nil {
		return fmt.Errorf("%s: watching pod deletions: %w", plugin, err)
	}
	return nil
}

// Nodes calls forget with every node the scheduler's node informer sees
// deleted, as Pods does for pods.
func Nodes(plugin string, handle framework.Handle, forget func(*v1.Node)) error {
	if !hasInformers(handle) {
		return nil
	}
	if err := watch(handle.SharedInformerFactory().Core().V1().Nodes().Informer(), forget); err != nil {
		return fmt.Errorf("%s: watching node deletions: %w", plugin, err)
	}
	return nil
}

func hasInformers(handle framework.Handle) bool {
	return handle != nil && handle.SharedInformerFactory() != nil
}

// watch adds onDelete's handler to the informer.
func watch[T any](informer toolscache.SharedIndexInformer, forget func(T)) error {
	_, err := informer.AddEventHandler(onDelete(forget))
	return err
}

// onDelete is a handler that passes on each deleted object of type T,
// unwrapped from its tombstone when the informer missed the deletion itself.
func onDelete[T any](forget func(T)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if value, ok := obj.(T); ok {
				forget(value)
			}
		},
	}
}
