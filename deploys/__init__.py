"""pyinfra deploys that turn bare Debian/Ubuntu machines into a kubeadm cluster.

Order (see `cluster.kubernetes_cluster`): node prep on every node -> control plane -> Calico -> join.
Every operation is guarded by a fact, so a second run on a finished cluster changes nothing and an
interrupted run resumes where it stopped.
"""
