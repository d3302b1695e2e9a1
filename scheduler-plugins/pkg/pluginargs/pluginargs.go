// Package pluginargs decodes the `args` of a pluginConfig entry strictly, so a
// misspelt field stops the scheduler at start instead of being ignored.
package pluginargs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Decode fills `into` from the plugin's args. Out-of-tree args reach the
// plugin as *runtime.Unknown (JSON or YAML bytes); nil means no pluginConfig
// entry, and `into` keeps its defaults. Unknown fields are an error naming
// the plugin.
func Decode(plugin string, obj runtime.Object, into interface{}) error {
	if obj == nil {
		return nil
	}
	unknown, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("%s: want args of type runtime.Unknown, got %T", plugin, obj)
	}
	if len(unknown.Raw) == 0 {
		return nil
	}
	if err := yaml.UnmarshalStrict(unknown.Raw, into); err != nil {
		return fmt.Errorf("%s: args: %w", plugin, err)
	}
	return nil
}

// Unknown wraps raw JSON as the framework hands args to a plugin (tests).
func Unknown(raw string) runtime.Object {
	return &runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON}
}
