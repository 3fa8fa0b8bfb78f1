level = "file2"
