module "again" {
  source = "./" # ERROR: Module calls itself
}
