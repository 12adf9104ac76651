"""`./lab deploy-scheduler`: build the scheduler image, side-load it, render and apply its manifests.

Steps, each safe to repeat (`verb.run_verb` runs them in this order):
1. image (image_delivery): the content tag (labkit.image) names the image; an archive already built for it
   is reused; with no build tool on the host it is built in the control-plane VM.
2. side-load (image_delivery): deploys/scheduler_image.py uploads the archive to every node and imports it
   into containerd's k8s.io namespace, skipping nodes that already hold that exact image.
3. render (manifests): templates/scheduler/*.yaml.j2 with values from the lab definition; the Deployment's
   pod template carries the rendered config's checksum, so a config change restarts the pod.
4. plugin manifests (plugin_manifests): a plugin folder's crds/ and manifests/, checked before step 1 and
   applied first (CRDs, waited for until Established, then the other objects).
5. apply (apply): server-side apply from the host with the lab's kubeconfig (field manager "kubelab"); an
   unchanged object keeps its resourceVersion, so a re-run with nothing changed changes nothing.
6. rollout (rollout): wait for the Deployment like `kubectl rollout status`; on failure print the pods'
   events and last log lines.
7. after a change of scheduler.mode (mode_switch): delete the other mode's objects that carry our labels.
"""

from labdef.errors import UserError


class DeployError(UserError):
    """deploy-scheduler failed; the message says at which step and what to look at."""
