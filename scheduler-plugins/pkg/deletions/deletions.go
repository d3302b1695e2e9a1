// Package deletions lets a plugin forget what it remembers about pods and
// nodes once the scheduler's own informers see them deleted.
package deletions

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Pods calls forget with every pod the scheduler's pod informer sees
// deleted. Without a handle or an informer factory (unit tests) it does
// nothing. The error names the plugin.
func Pods(plugin string, handle framework.Handle, forget func(*v1.Pod)) error {
	return watch(plugin, "pod", handle, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	}, forget)
}

// Nodes calls forget with every node the scheduler's node informer sees
// deleted, as Pods does for pods.
func Nodes(plugin string, handle framework.Handle, forget func(*v1.Node)) error {
	return watch(plugin, "node", handle, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().Nodes().Informer()
	}, forget)
}

// watch adds onDelete's handler to the handle's informer of `kind`, when the
// handle has an informer factory.
func watch[T any](plugin, kind string, handle framework.Handle, informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer, forget func(T)) error {
	if handle == nil || handle.SharedInformerFactory() == nil {
		return nil
	}
	if _, err := informer(handle.SharedInformerFactory()).AddEventHandler(onDelete(forget)); err != nil {
		return fmt.Errorf("%s: watching %s deletions: %w", plugin, kind, err)
	}
	return nil
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
