// Command k8scheck decodes each document of a Kubernetes manifest strictly
// into its k8s.io/api type: a misspelled, misplaced or mistyped field fails,
// as the API server would refuse it. For a machine with no cluster, where
// `kubectl apply --dry-run` cannot run (it asks a server). It is a module of
// its own so the gateway's go.mod does not carry k8s.io/api.
//
//	cd configs/deploy/offline/k8scheck && go run . ../../kubernetes/signoff.yaml
//
// The references between documents (Secret keys, ports, selectors) are
// checked by cmd/signoff's TestKubernetesExampleNamesWhatExists.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: k8scheck MANIFEST.yaml")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bad := 0
	for i, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			fmt.Println("doc", i, err)
			bad++
			continue
		}
		var obj any
		switch meta.APIVersion + "/" + meta.Kind {
		case "v1/Secret":
			obj = &corev1.Secret{}
		case "v1/Service":
			obj = &corev1.Service{}
		case "v1/ConfigMap":
			obj = &corev1.ConfigMap{}
		case "apps/v1/Deployment":
			obj = &appsv1.Deployment{}
		case "apps/v1/StatefulSet":
			obj = &appsv1.StatefulSet{}
		default:
			fmt.Println("doc", i, "unknown kind", meta.APIVersion, meta.Kind)
			bad++
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			fmt.Printf("doc %d %s: %v\n", i, meta.Kind, err)
			bad++
			continue
		}
		name := ""
		switch o := obj.(type) {
		case *corev1.Secret:
			name = o.Name
		case *corev1.Service:
			name = o.Name
		case *appsv1.Deployment:
			name = o.Name
			c := o.Spec.Template.Spec.Containers[0]
			fmt.Printf("  probes: live %s:%s ready %s:%s\n", c.LivenessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Port.String(), c.ReadinessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Port.String())
		case *appsv1.StatefulSet:
			name = o.Name
		}
		fmt.Printf("ok doc %d: %s/%s %s\n", i, meta.APIVersion, meta.Kind, strings.TrimSpace(name))
	}
	if bad > 0 {
		fmt.Printf("%d document(s) refused\n", bad)
		os.Exit(1)
	}
}
