package embedded

// BinDirFor exposes binDirFor to the external tests, which give it fake
// installs of several versions.
var BinDirFor = binDirFor
