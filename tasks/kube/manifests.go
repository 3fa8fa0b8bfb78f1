package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// manifest is one object to apply and where it was written, for messages.
type manifest struct {
	obj   *unstructured.Unstructured
	where string // e.g. `file "a.yaml" document 2`, `content document 1 item 3`
}

// String names the object and its origin, never its contents.
func (m *manifest) String() string {
	return fmt.Sprintf("%s: apiVersion %q kind %q name %q", m.where, m.obj.GetAPIVersion(), m.obj.GetKind(), m.obj.GetName())
}

// manifestExtensions are the files a directory in files stands for.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// readManifests decodes files (directories expanded) and then content, in order.
func readManifests(files []string, content string) ([]*manifest, error) {
	var out []*manifest
	for _, f := range files {
		paths, err := expandPath(f)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			ms, err := readFile(p)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	if content != "" {
		ms, err := decodeStream(strings.NewReader(content), "content")
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// expandPath returns path itself, or for a directory its manifest files sorted by name.
func expandPath(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read file %q: %w", path, pathReason(err))
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("read directory %q: %w", path, err)
	}
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(manifestExtensions, strings.ToLower(filepath.Ext(e.Name()))) {
			paths = append(paths, filepath.Join(path, e.Name()))
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("read directory %q: no *.yaml, *.yml or *.json files", path)
	}
	return paths, nil
}

func readFile(path string) ([]*manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read file %q: %w", path, pathReason(err))
	}
	defer f.Close()
	return decodeStream(f, fmt.Sprintf("file %q", path))
}

// decodeStream splits r into YAML documents ("---") and decodes each; JSON is a
// single YAML document. Empty documents are skipped but counted.
func decodeStream(r io.Reader, where string) ([]*manifest, error) {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []*manifest
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if err == io.EOF {
			return out, nil
		}
		docWhere := fmt.Sprintf("%s document %d", where, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", docWhere, err)
		}
		ms, err := decodeDocument(doc, docWhere)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
}

// decodeDocument turns one document into its object, or a List's items.
func decodeDocument(doc []byte, where string) ([]*manifest, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, parseError(err))
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil, nil
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		return nil, fmt.Errorf("%s: not an object (a mapping with apiVersion, kind and metadata)", where)
	}
	items, isList := obj["items"].([]any)
	if !isList || !strings.HasSuffix(fmt.Sprint(obj["kind"]), "List") {
		m, err := newManifest(obj, where)
		if err != nil {
			return nil, err
		}
		return []*manifest{m}, nil
	}
	out := make([]*manifest, 0, len(items))
	for i, item := range items {
		itemWhere := fmt.Sprintf("%s item %d", where, i+1)
		o, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", itemWhere)
		}
		m, err := newManifest(o, itemWhere)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// newManifest checks what apply needs: apiVersion, kind and metadata.name.
func newManifest(obj map[string]any, where string) (*manifest, error) {
	u := &unstructured.Unstructured{Object: obj}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return nil, fmt.Errorf("%s: apiVersion and kind are required", where)
	}
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		return nil, fmt.Errorf("%s: apiVersion %q is not GROUP/VERSION or VERSION", where, apiVersion)
	}
	if meta, ok := obj["metadata"]; ok {
		if _, ok := meta.(map[string]any); !ok {
			return nil, fmt.Errorf("%s: apiVersion %q kind %q: metadata is not an object", where, apiVersion, kind)
		}
	}
	if u.GetName() == "" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q: metadata.name is required", where, apiVersion, kind)
	}
	return &manifest{obj: u, where: where}, nil
}

// pathReason drops the operation and path an *fs.PathError repeats.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
