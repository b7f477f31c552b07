// job_submit/k8s_bridge: the Slurm job_submit plugin of slurm-k8s-bridge.
//
// Loaded by slurmctld (JobSubmitPlugins=k8s_bridge, PluginDir including this .so's folder).
// It runs inside slurmctld with its locks held, so it must never block beyond a small
// budget and never crash: all input is untrusted, strings slurmctld frees come from
// slurm_xstrdup, and only the symbols in exports.map are visible.
//
// Built against the exact Slurm release it is loaded by (SLURM_VERSION_NUMBER below is
// checked by slurmctld at load time; a mismatch refuses to load the plugin).
#include <cstdint>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

// Provided by slurmctld (libslurmfull) at load time; not in Slurm's public headers.
extern "C" {
void slurm_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
}

extern "C" {

// The plugin identity Slurm's plugin loader reads.
extern const char plugin_name[] = "job_submit k8s_bridge: slurm-k8s-bridge admission";
extern const char plugin_type[] = "job_submit/k8s_bridge";
extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;

int init(void) {
  slurm_info("job_submit/k8s_bridge: loaded (built for Slurm %u.%02u.%02u)",
             SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
             SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
  return SLURM_SUCCESS;
}

int fini(void) { return SLURM_SUCCESS; }

// Accepts every job for now; admission against the shared inventory comes with the
// daemon's protocol (issue: Slurm side).
int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  (void)job_desc;
  (void)submit_uid;
  (void)err_msg;
  return SLURM_SUCCESS;
}

// job_record_t is internal to slurmctld; the plugin only needs its address.
int job_modify(job_desc_msg_t* job_desc, void* job_ptr, uint32_t submit_uid, char** err_msg) {
  (void)job_desc;
  (void)job_ptr;
  (void)submit_uid;
  (void)err_msg;
  return SLURM_SUCCESS;
}

}  // extern "C"
