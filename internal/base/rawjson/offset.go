package rawjson

// Offset returns the offset of sub within data. sub must be a subslice of
// data that kept data's capacity (the scanner's values and members do: it
// never trims them); 0 when it is not.
func Offset(data, sub []byte) int64 {
	off := cap(data) - cap(sub)
	if off < 0 || off > len(data) {
		return 0
	}
	return int64(off)
}
