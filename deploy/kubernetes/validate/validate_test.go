package validate

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifestDir holds the manifests, relative to this package.
const manifestDir = ".."

const kustomizationFile = "kustomization.yaml"

// kinds are the kinds the example may hold, each with the one apiVersion
// it is served at and its API type.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"ConfigMap":           {"v1", func() any { return &corev1.ConfigMap{} }},
	"Secret":              {"v1", func() any { return &corev1.Secret{} }},
	"Service":             {"v1", func() any { return &corev1.Service{} }},
	"Deployment":          {"apps/v1", func() any { return &appsv1.Deployment{} }},
	"PodDisruptionBudget": {"policy/v1", func() any { return &policyv1.PodDisruptionBudget{} }},
}

// kustomization is the subset of kustomize's Kustomization the example
// uses; decoded strictly, so any other field is refused until it is added
// here and checked.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels,omitempty"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// gatehostConfig is what these checks read of the ConfigMap's gatehost.yaml;
// the repository's config package checks the rest (TestDeployConfig).
type gatehostConfig struct {
	Store struct {
		Kind    string `json:"kind"`
		DSN     string `json:"dsn"`
		DSNFile string `json:"dsn_file"`
		NodeID  string `json:"node_id"`
	} `json:"store"`
	CacheDir string `json:"cache_dir"`
}

// set is the decoded example.
type set struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	pdbs        []*policyv1.PodDisruptionBudget
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
}

// readManifests returns the example's YAML files by name.
func readManifests(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		files[filepath.Base(n)] = b
	}
	require.Contains(t, files, kustomizationFile)
	return files
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// load decodes files: the kustomization must list exactly the other
// files, and each document of those decodes strictly into its kind's type.
func load(files map[string][]byte) (*set, error) {
	var k kustomization
	if err := decodeStrict(files[kustomizationFile], &k); err != nil {
		return nil, fmt.Errorf("%s: %w", kustomizationFile, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q: want kustomize.config.k8s.io/v1beta1 Kustomization", kustomizationFile, k.APIVersion, k.Kind)
	}
	var errs []error
	for _, r := range k.Resources {
		if _, ok := files[r]; !ok {
			errs = append(errs, fmt.Errorf("%s: resources: %s: no such file", kustomizationFile, r))
		}
	}
	for name := range files {
		if name != kustomizationFile && !slices.Contains(k.Resources, name) {
			errs = append(errs, fmt.Errorf("%s: resources: %s is not listed", kustomizationFile, name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s := &set{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, name := range k.Resources {
		for i, doc := range docSep.Split(string(files[name]), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			if err := s.add([]byte(doc)); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
			}
		}
	}
	return s, nil
}

// decodeStrict decodes one YAML document into v as the API server's strict
// field validation does: a key given twice, or a field v does not have, is
// an error naming its path. Field names match case-sensitively
// (encoding/json alone would take readOnlyRootFileSystem for
// readOnlyRootFilesystem).
func decodeStrict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// add decodes one document strictly and files it by kind.
func (s *set) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	k, ok := kinds[tm.Kind]
	if !ok {
		return fmt.Errorf("kind %q: not one this example uses", tm.Kind)
	}
	if tm.APIVersion != k.apiVersion {
		return fmt.Errorf("kind %s: apiVersion %q: want %q", tm.Kind, tm.APIVersion, k.apiVersion)
	}
	obj := k.new()
	if err := decodeStrict(doc, obj); err != nil {
		return fmt.Errorf("kind %s: %w", tm.Kind, err)
	}
	var dup bool
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, dup = s.configMaps[o.Name]
		s.configMaps[o.Name] = o
	case *corev1.Secret:
		_, dup = s.secrets[o.Name]
		s.secrets[o.Name] = o
	case *corev1.Service:
		s.services = append(s.services, o)
	case *appsv1.Deployment:
		s.deployments = append(s.deployments, o)
	case *policyv1.PodDisruptionBudget:
		s.pdbs = append(s.pdbs, o)
	}
	if m, ok := obj.(metav1.Object); ok && (m.GetName() == "" || dup) {
		return fmt.Errorf("kind %s: metadata.name %q: want a name of its own", tm.Kind, m.GetName())
	}
	return nil
}

// secretHas reports whether Secret name exists with key.
func (s *set) secretHas(name, key string) bool {
	sec, ok := s.secrets[name]
	return ok && hasKey(key, sec.Data, sec.StringData)
}

// configMapHas reports whether ConfigMap name exists with key.
func (s *set) configMapHas(name, key string) bool {
	cm, ok := s.configMaps[name]
	return ok && hasKey(key, cm.Data, cm.BinaryData)
}

// hasKey reports whether key is in either of the two data maps of a
// ConfigMap or a Secret.
func hasKey[A, B any](key string, a map[string]A, b map[string]B) bool {
	_, inA := a[key]
	_, inB := b[key]
	return inA || inB
}

// check returns every way the decoded example does not fit gatehost serve.
func check(s *set) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(s.deployments) != 1 {
		bad("want one Deployment, have %d", len(s.deployments))
		return errors.Join(errs...)
	}
	d := s.deployments[0]
	pod := &d.Spec.Template
	podLabels := labels.Set(pod.Labels)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || d.Spec.Selector == nil || sel.Empty() || !sel.Matches(podLabels) {
		bad("deployment %s: spec.selector does not select its pod template's labels", d.Name)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		bad("deployment %s: spec.replicas: a fleet needs at least 2", d.Name)
	}
	errs = append(errs, checkPod(s, d.Name, &pod.Spec)...)
	selected := false
	for _, svc := range s.services {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			bad("service %s: spec.selector selects no pod of deployment %s", svc.Name, d.Name)
			continue
		}
		selected = true
		for _, p := range svc.Spec.Ports {
			if _, ok := containerPort(&pod.Spec, p.TargetPort); !ok {
				bad("service %s: port %s: targetPort %s is no container port", svc.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	if !selected {
		bad("no Service selects the pods of deployment %s", d.Name)
	}
	if len(s.pdbs) == 0 {
		bad("no PodDisruptionBudget for deployment %s", d.Name)
	}
	for _, pdb := range s.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil || sel.Empty() || !sel.Matches(podLabels) {
			bad("poddisruptionbudget %s: spec.selector selects no pod of deployment %s", pdb.Name, d.Name)
		}
	}
	return errors.Join(errs...)
}

// checkPod checks the references, probes, mounts and security of the
// pod, and that its one container runs gatehost serve as this example
// configures it.
func checkPod(s *set, owner string, pod *corev1.PodSpec) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("deployment %s: "+format, append([]any{owner}, args...)...))
	}
	// ref checks that volume vol's ConfigMap or Secret exists with the
	// keys it projects.
	ref := func(vol, kind, name string, exists bool, items []corev1.KeyToPath, has func(name, key string) bool) {
		if !exists {
			bad("volume %s: %s %q is not in the example", vol, kind, name)
		}
		for _, it := range items {
			if !has(name, it.Key) {
				bad("volume %s: %s %q has no key %q", vol, kind, name, it.Key)
			}
		}
	}
	volumes := map[string]*corev1.Volume{}
	for i := range pod.Volumes {
		v := &pod.Volumes[i]
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil:
			_, ok := s.configMaps[v.ConfigMap.Name]
			ref(v.Name, "ConfigMap", v.ConfigMap.Name, ok, v.ConfigMap.Items, s.configMapHas)
		case v.Secret != nil:
			_, ok := s.secrets[v.Secret.SecretName]
			ref(v.Name, "Secret", v.Secret.SecretName, ok, v.Secret.Items, s.secretHas)
		}
	}
	runAsNonRoot := pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot
	if len(pod.Containers) != 1 {
		bad("want one container, have %d", len(pod.Containers))
		return errs
	}
	c := &pod.Containers[0]
	env := map[string]*corev1.EnvVar{}
	for i := range c.Env {
		e := &c.Env[i]
		env[e.Name] = e
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil && !s.secretHas(r.Name, r.Key) {
			bad("env %s: Secret %q with key %q is not in the example", e.Name, r.Name, r.Key)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil && !s.configMapHas(r.Name, r.Key) {
			bad("env %s: ConfigMap %q with key %q is not in the example", e.Name, r.Name, r.Key)
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.SecretRef != nil && s.secrets[ef.SecretRef.Name] == nil {
			bad("envFrom: Secret %q is not in the example", ef.SecretRef.Name)
		}
		if ef.ConfigMapRef != nil && s.configMaps[ef.ConfigMapRef.Name] == nil {
			bad("envFrom: ConfigMap %q is not in the example", ef.ConfigMapRef.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if volumes[m.Name] == nil {
			bad("container %s: volumeMount %s names no volume of the pod", c.Name, m.Name)
		}
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			bad("container %s: %s: want an httpGet of %s", c.Name, p.name, p.path)
		case p.probe.HTTPGet.Path != p.path:
			bad("container %s: %s: path %q: want %s", c.Name, p.name, p.probe.HTTPGet.Path, p.path)
		default:
			if _, ok := containerPort(pod, p.probe.HTTPGet.Port); !ok {
				bad("container %s: %s: port %s is no container port", c.Name, p.name, p.probe.HTTPGet.Port.String())
			}
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		bad("container %s: securityContext.readOnlyRootFilesystem: want true", c.Name)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		bad("container %s: securityContext.allowPrivilegeEscalation: want false", c.Name)
	}
	if sc != nil && sc.RunAsNonRoot != nil {
		runAsNonRoot = *sc.RunAsNonRoot
	}
	if !runAsNonRoot {
		bad("container %s: runAsNonRoot: want true (pod or container securityContext)", c.Name)
	}
	errs = append(errs, checkServe(s, owner, pod, c, volumes, env)...)
	return errs
}

// checkServe checks the gatehost serve command line and environment
// against the mounts and the config: the config file, the token file and
// the DSN file are in mounted keys, the node id is the pod's name, the DSN
// comes from a Secret, and cache_dir is on a writable volume.
func checkServe(s *set, owner string, pod *corev1.PodSpec, c *corev1.Container, volumes map[string]*corev1.Volume, env map[string]*corev1.EnvVar) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("deployment %s: container %s: "+format, append([]any{owner, c.Name}, args...)...))
	}
	argv := append(slices.Clone(c.Command), c.Args...)
	if !slices.Contains(argv, "serve") {
		bad("command and args: want gatehost serve, have %q", argv)
		return errs
	}
	flags := map[string]string{}
	for _, a := range argv {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			flags[k] = v
		} else if strings.HasPrefix(a, "--") {
			flags[a] = ""
		}
	}
	cfgPath, ok := flags["--config"]
	if !ok {
		bad("args: --config=PATH is required (the mounted ConfigMap's gatehost.yaml)")
		return errs
	}
	cm, ok := mountedKey(s, c, volumes, cfgPath)
	if !ok || cm.ConfigMap == nil {
		bad("--config %s: no key of a mounted ConfigMap", cfgPath)
		return errs
	}
	var gc gatehostConfig
	if err := yaml.Unmarshal([]byte(s.configMaps[cm.ConfigMap.Name].Data[path.Base(cfgPath)]), &gc); err != nil {
		bad("--config %s: %v", cfgPath, err)
		return errs
	}
	if tf, ok := flags["--token-file"]; ok {
		if v, ok := mountedKey(s, c, volumes, tf); !ok || v.Secret == nil {
			bad("--token-file %s: no key of a mounted Secret", tf)
		}
	}
	listen := flags["--listen"]
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		bad("--listen %q: want host:port (the default is loopback, unreachable from outside the pod)", listen)
	} else {
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			bad("--listen %s: loopback is unreachable from outside the pod", listen)
		}
		_, hasToken := flags["--token-file"]
		_, insecure := flags["--insecure-listen-any"]
		if !hasToken && !insecure {
			bad("--listen %s: a non-loopback address needs --token-file (gatehost serve refuses it otherwise)", listen)
		}
		if p, ok := containerPort(pod, intstr.Parse(port)); !ok || p.Name == "" {
			bad("--listen %s: port %s is no named container port", listen, port)
		}
	}
	if gc.Store.Kind != "postgres" {
		bad("gatehost.yaml: store.kind %q: want postgres", gc.Store.Kind)
	}
	if gc.Store.DSN != "" {
		bad("gatehost.yaml: store.dsn: the DSN is a secret: give it as $GATEHOST_STORE_DSN from a Secret, or store.dsn_file")
	}
	switch e := env["GATEHOST_STORE_DSN"]; {
	case gc.Store.DSNFile != "":
		if v, ok := mountedKey(s, c, volumes, gc.Store.DSNFile); !ok || v.Secret == nil {
			bad("gatehost.yaml: store.dsn_file %s: no key of a mounted Secret", gc.Store.DSNFile)
		}
	case e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil:
		bad("env GATEHOST_STORE_DSN: want valueFrom.secretKeyRef (or store.dsn_file)")
	}
	if e := env["GATEHOST_STORE_NODE_ID"]; gc.Store.NodeID == "" &&
		(e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name") {
		bad("env GATEHOST_STORE_NODE_ID: want valueFrom.fieldRef.fieldPath metadata.name, one node id per pod")
	}
	if gc.CacheDir == "" || gc.CacheDir == "off" {
		bad("gatehost.yaml: cache_dir %q: want a directory on a writable volume (the root file system is read-only)", gc.CacheDir)
	} else if m := mountFor(c, gc.CacheDir); m == nil || m.ReadOnly || volumes[m.Name] == nil || volumes[m.Name].EmptyDir == nil {
		bad("gatehost.yaml: cache_dir %s: not under a writable emptyDir mount", gc.CacheDir)
	} else if path.Clean(gc.CacheDir) == path.Clean(m.MountPath) {
		// The volume's own directory is world-writable: gatehost refuses
		// it as a cache, and creates a private subdirectory instead.
		bad("gatehost.yaml: cache_dir %s: use a subdirectory of the mount %s", gc.CacheDir, m.MountPath)
	}
	return errs
}

// mountFor returns the container's mount whose path holds p, the deepest.
func mountFor(c *corev1.Container, p string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		mp := path.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/")) && (best == nil || len(mp) > len(path.Clean(best.MountPath))) {
			best = m
		}
	}
	return best
}

// mountedKey returns the ConfigMap or Secret volume whose mount holds the
// file p as one of its keys (a whole-volume mount: no subPath, no items).
func mountedKey(s *set, c *corev1.Container, volumes map[string]*corev1.Volume, p string) (*corev1.VolumeSource, bool) {
	m := mountFor(c, p)
	if m == nil || m.SubPath != "" || path.Dir(p) != path.Clean(m.MountPath) {
		return nil, false
	}
	v := volumes[m.Name]
	if v == nil {
		return nil, false
	}
	key := path.Base(p)
	switch {
	case v.ConfigMap != nil && len(v.ConfigMap.Items) == 0:
		return &v.VolumeSource, s.configMapHas(v.ConfigMap.Name, key)
	case v.Secret != nil && len(v.Secret.Items) == 0:
		return &v.VolumeSource, s.secretHas(v.Secret.SecretName, key)
	}
	return nil, false
}

// containerPort resolves a probe's or a Service's port, by name or number,
// to a port of the pod's containers.
func containerPort(pod *corev1.PodSpec, port intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, c := range pod.Containers {
		for _, p := range c.Ports {
			if (port.Type == intstr.String && port.StrVal != "" && p.Name == port.StrVal) ||
				(port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return p, true
			}
		}
	}
	return corev1.ContainerPort{}, false
}

// TestManifests: the example decodes strictly and fits gatehost serve.
func TestManifests(t *testing.T) {
	s, err := load(readManifests(t))
	require.NoError(t, err)
	require.NoError(t, check(s))
	require.Len(t, s.deployments, 1)
	d := s.deployments[0]
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "ghcr.io/OWNER/gatehost:VERSION", c.Image, "the placeholder docs/FLEET.md tells the user to replace")
	require.Len(t, s.services, 1)
	require.Len(t, s.pdbs, 1)
	assert.Contains(t, s.configMaps, "gatehost-config")
	assert.Contains(t, s.secrets, "gatehost-store")
	assert.Contains(t, s.secrets, "gatehost-tokens")
	for name, sec := range s.secrets {
		assert.Empty(t, sec.Data, "secret %s: placeholders go in stringData", name)
	}
}

// TestManifestsRefuseBrokenCopies: each deliberately broken copy of the
// example is refused, with a message naming what is wrong. Each edit must
// change its file, so an edit that no longer matches the example fails
// instead of passing vacuously.
func TestManifestsRefuseBrokenCopies(t *testing.T) {
	const dsnEnv = `            - name: GATEHOST_STORE_DSN
              valueFrom:
                secretKeyRef:
                  name: gatehost-store
                  key: dsn
`
	tests := []struct {
		name     string
		file     string
		old, new string
		want     string
	}{
		{"unknown field in the Deployment", "deployment.yaml", "revisionHistoryLimit: 5", "revisionHistoryLimt: 5", `unknown field "spec.revisionHistoryLimt"`},
		{"misspelt nested field", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", `unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`},
		{"field twice", "deployment.yaml", "  replicas: 3\n", "  replicas: 3\n  replicas: 2\n", `"replicas" already set`},
		{"wrong type", "deployment.yaml", "replicas: 3", "replicas: three", "replicas"},
		{"wrong apiVersion of the Deployment", "deployment.yaml", "apiVersion: apps/v1", "apiVersion: extensions/v1beta1", `kind Deployment: apiVersion "extensions/v1beta1": want "apps/v1"`},
		{"wrong apiVersion of the PodDisruptionBudget", "pdb.yaml", "apiVersion: policy/v1", "apiVersion: policy/v1beta1", `kind PodDisruptionBudget: apiVersion "policy/v1beta1"`},
		{"kind misspelt", "service.yaml", "kind: Service", "kind: Servce", `kind "Servce"`},
		{"readiness probe path typo", "deployment.yaml", "path: /readyz", "path: /readz", `readinessProbe: path "/readz": want /readyz`},
		{"liveness probe path typo", "deployment.yaml", "path: /healthz", "path: /health", `livenessProbe: path "/health": want /healthz`},
		{"probe on no container port", "deployment.yaml", "path: /readyz\n              port: http", "path: /readyz\n              port: 8080", "readinessProbe: port 8080 is no container port"},
		{"missing Secret reference", "deployment.yaml", "name: gatehost-store", "name: gatehost-stor", `Secret "gatehost-stor" with key "dsn" is not in the example`},
		{"missing Secret key", "deployment.yaml", "key: dsn", "key: url", `Secret "gatehost-store" with key "url"`},
		{"missing token Secret volume", "deployment.yaml", "secretName: gatehost-tokens", "secretName: gatehost-token", `Secret "gatehost-token" is not in the example`},
		{"missing ConfigMap", "deployment.yaml", "name: gatehost-config", "name: gatehost-conf", `ConfigMap "gatehost-conf" is not in the example`},
		{"mount of no volume", "deployment.yaml", "- name: cache\n              mountPath", "- name: cache2\n              mountPath", "volumeMount cache2 names no volume"},
		{"config file not in the ConfigMap", "deployment.yaml", "--config=/etc/gatehost/config/gatehost.yaml", "--config=/etc/gatehost/config/gatehost.yml", "--config /etc/gatehost/config/gatehost.yml: no key of a mounted ConfigMap"},
		{"token file not mounted", "deployment.yaml", "--token-file=/etc/gatehost/tokens/agents", "--token-file=/etc/gatehost/tokens/agent", "--token-file /etc/gatehost/tokens/agent: no key"},
		{"no token on a non-loopback address", "deployment.yaml", "            - --token-file=/etc/gatehost/tokens/agents\n", "", "a non-loopback address needs --token-file"},
		{"loopback listen", "deployment.yaml", "--listen=:8490", "--listen=127.0.0.1:8490", "loopback is unreachable"},
		{"listen on an undeclared port", "deployment.yaml", "--listen=:8490", "--listen=:9000", "port 9000 is no named container port"},
		{"DSN as a literal", "deployment.yaml", dsnEnv, "            - name: GATEHOST_STORE_DSN\n              value: postgres://gatehost:pw@db/gatehost\n", "env GATEHOST_STORE_DSN: want valueFrom.secretKeyRef"},
		{"DSN in the ConfigMap", "configmap.yaml", "kind: postgres\n", "kind: postgres\n      dsn: postgres://gatehost:pw@db/gatehost\n", "store.dsn: the DSN is a secret"},
		{"node id not the pod's name", "deployment.yaml", "fieldPath: metadata.name", "fieldPath: metadata.namespace", "GATEHOST_STORE_NODE_ID: want valueFrom.fieldRef.fieldPath metadata.name"},
		{"file store", "configmap.yaml", "kind: postgres", "kind: file", `store.kind "file": want postgres`},
		{"cache_dir on the read-only root", "configmap.yaml", "cache_dir: /var/cache/gatehost/wazero", "cache_dir: /tmp/wazero", "cache_dir /tmp/wazero: not under a writable emptyDir mount"},
		{"cache_dir the volume's own directory", "configmap.yaml", "cache_dir: /var/cache/gatehost/wazero", "cache_dir: /var/cache/gatehost", "use a subdirectory of the mount"},
		{"writable root file system", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem: want true"},
		{"privilege escalation", "deployment.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation: want false"},
		{"root allowed", "deployment.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot: want true"},
		{"selector misses the pods", "deployment.yaml", "  selector:\n    matchLabels:\n      app.kubernetes.io/name: gatehost\n", "  selector:\n    matchLabels:\n      app.kubernetes.io/name: gatehst\n", "spec.selector does not select its pod template's labels"},
		{"Service selects no pod", "service.yaml", "app.kubernetes.io/component: serve\n  ports", "app.kubernetes.io/component: server\n  ports", "service gatehost: spec.selector selects no pod"},
		{"Service targets no port", "service.yaml", "targetPort: http", "targetPort: web", "targetPort web is no container port"},
		{"PodDisruptionBudget selects no pod", "pdb.yaml", "      app.kubernetes.io/component: serve", "      app.kubernetes.io/component: server", "poddisruptionbudget gatehost: spec.selector selects no pod"},
		{"manifest not listed", kustomizationFile, "  - pdb.yaml\n", "", "pdb.yaml is not listed"},
		{"listed file missing", kustomizationFile, "  - pdb.yaml\n", "  - pdb.yaml\n  - hpa.yaml\n", "hpa.yaml: no such file"},
		{"unknown kustomization field", kustomizationFile, "resources:", "resource:", `unknown field "resource"`},
	}
	base := readManifests(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{}
			for k, v := range base {
				files[k] = v
			}
			orig := string(files[tt.file])
			require.Contains(t, orig, tt.old, "the edit must change %s", tt.file)
			files[tt.file] = []byte(strings.Replace(orig, tt.old, tt.new, 1))
			s, err := load(files)
			if err == nil {
				err = check(s)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			t.Log(err)
		})
	}
}
