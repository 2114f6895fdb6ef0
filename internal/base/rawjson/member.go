package rawjson

// Get returns the value of the member key of a JSON object (the last one,
// as a JSON decoder keeps), or nil when obj is not an object or has none.
func Get(obj []byte, key string) []byte {
	if Kind(obj) != '{' {
		return nil
	}
	ms, err := Members(obj)
	if err != nil {
		return nil
	}
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].Key == key {
			return ms[k].Value
		}
	}
	return nil
}

// Set returns a compact copy of a JSON object with the member key set to
// value (added at the end when absent); obj itself when it is not an
// object.
func Set(obj []byte, key string, value []byte) []byte {
	ms, err := Members(obj)
	if err != nil {
		return obj
	}
	buf := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	buf = append(buf, '{')
	done := false
	for i, m := range ms {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, m.RawKey...)
		buf = append(buf, ':')
		if m.Key == key {
			buf = append(buf, value...)
			done = true
		} else {
			buf = append(buf, m.Value...)
		}
	}
	if !done {
		if len(ms) > 0 {
			buf = append(buf, ',')
		}
		buf = AppendString(buf, key)
		buf = append(buf, ':')
		buf = append(buf, value...)
	}
	return append(buf, '}')
}
