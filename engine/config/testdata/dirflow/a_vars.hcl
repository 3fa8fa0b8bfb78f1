variable "who" {
  default = "dir"
}
