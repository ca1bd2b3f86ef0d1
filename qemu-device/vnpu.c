/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vnpu: the PCI NPU device, as thin QEMU glue over the vnpu firmware
 * simulator (firmware-sim/, MIT). docs/hw-spec.md is the datasheet,
 * docs/qemu-device.md describes this model.
 *
 * BAR0 forwards 32-bit register accesses to the simulator, BAR2 holds the
 * MSI-X table and PBA, BAR4 is the VRAM, a RAM region whose host memory is
 * the simulator's VRAM. The simulator reaches plain guest RAM only, never
 * through a dispatch of the memory core (see vnpu_dma_target_ok): DMA aimed
 * at anything else (MMIO, ROM, our own BARs, other devices' memory) fails and
 * becomes a DMA error in the device, and the simulator's threads never take
 * the BQL - a vCPU resetting the device holds it while it waits for them,
 * which takes milliseconds at most (the simulator cancels kernels inside
 * their blocks).
 *
 * Execution modes: "threads" runs the simulator's command processor and
 * cores on their own threads, off the BQL; "deterministic" runs the command
 * processor in a bottom half of the main loop, one bounded step at a time.
 * In threads mode a doorbell written while the command processor sleeps
 * runs the queue's short commands (NOP, FENCE_SIGNAL, TIMESTAMP) in the
 * vCPU's write, and their interrupts go out before the write returns: no
 * host thread wakes on the way (docs/vm.md has the profile). Interrupts
 * raised on a simulator thread are delivered by a bottom half in the main
 * loop; all of them under the BQL.
 *
 * The device clock is QEMU_CLOCK_VIRTUAL: heartbeat, timestamps and fence
 * polling in deterministic mode follow virtual time (under -accel qtest it
 * moves only with clock_step).
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/range.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/blocker.h"
#include "system/dma.h"

#include "vnpu/hw_regs.h"
#include "vnpu_sim.h"

#define TYPE_VNPU "vnpu"
OBJECT_DECLARE_SIMPLE_TYPE(VnpuState, VNPU)

/* A deterministic bottom half runs commands for at most this long (host
 * time) before yielding to the main loop, so that a long queue does not
 * stall the monitor, other devices or the vCPUs. */
#define VNPU_RUN_SLICE_NS (1 * SCALE_MS)
/* Deterministic mode: how often a queue blocked in FENCE_WAIT re-reads its
 * fence (virtual time). */
#define VNPU_FENCE_POLL_NS (100 * SCALE_US)
#define VNPU_PCIE_CAP_OFFSET 0x80

struct VnpuState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion vram;
    struct vnpu_sim *sim;
    bool deterministic;
    bool msix_ok;

    /* Deterministic mode: runs the command processor. */
    QEMUBH *run_bh;
    QEMUTimer *fence_timer;
    /* Delivers the vectors in pending_vectors (set from any thread). */
    QEMUBH *irq_bh;
    uint32_t pending_vectors;

    Error *migration_blocker;

    /* Properties. */
    uint64_t vram_size;
    uint32_t num_queues;
    uint32_t num_contexts;
    uint32_t num_cores;
    char *exec_mode;
    bool test_mode;
};

/* ---- HAL ------------------------------------------------------------------ */

/*
 * The simulator's threads are not QEMU threads: each registers with RCU as
 * it starts, before it can touch guest memory (address_space_rw reads the
 * memory map under RCU) or log, and unregisters as it ends.
 */
static void vnpu_hal_thread_start(void *opaque)
{
    rcu_register_thread();
}

static void vnpu_hal_thread_exit(void *opaque)
{
    rcu_unregister_thread();
}

/*
 * The only memory the device masters: plain, writable guest RAM. Not ROM,
 * ROM devices, read-only RAM or RAM devices (their writes and some reads are
 * MMIO dispatches, which take the BQL: a simulator thread must never wait
 * for it, as a vCPU resetting the device holds it while it waits for that
 * thread), not MMIO nor unassigned space, and not memory that belongs to a
 * device - another device's BAR, a display's VRAM, our own VRAM BAR: guest
 * RAM belongs to a memory backend or to the machine.
 */
static bool vnpu_dma_target_ok(MemoryRegion *mr)
{
    if (!mr || !memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        memory_region_is_romd(mr) || mr->rom_device || mr->readonly ||
        !mr->ram_block) {
        return false;
    }
    return !mr->owner || !object_dynamic_cast(mr->owner, TYPE_DEVICE);
}

static void vnpu_dma_refused(uint64_t addr, uint64_t len, const char *what)
{
    qemu_log_mask(LOG_GUEST_ERROR, "vnpu: DMA %s of 0x%" PRIx64 " bytes at "
                  "0x%" PRIx64 " refused: not guest RAM\n", what, len, addr);
}

/*
 * Device reads: translated and copied here, under RCU only, so that no
 * part of a refused range is ever dispatched (the memory core would take
 * the BQL for it).
 */
static int vnpu_hal_dma_read(void *opaque, uint64_t addr, void *buf,
                             uint64_t len)
{
    VnpuState *s = opaque;
    AddressSpace *as = pci_get_address_space(&s->parent_obj);
    const MemTxAttrs attrs = { .memory = 1 };
    uint8_t *p = buf;
    FlatView *fv;

    dma_barrier(as, DMA_DIRECTION_TO_DEVICE);
    RCU_READ_LOCK_GUARD();
    fv = address_space_to_flatview(as);
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr = flatview_translate(fv, addr, &xlat, &l, false,
                                              attrs);

        if (!l || !vnpu_dma_target_ok(mr)) {
            vnpu_dma_refused(addr, len, "read");
            return -1;
        }
        fuzz_dma_read_cb(addr, l, mr);
        memcpy(p, (uint8_t *)memory_region_get_ram_ptr(mr) + xlat, l);
        addr += l;
        p += l;
        len -= l;
    }
    return 0;
}

/*
 * Device writes: through address_space_map, whose unmap marks the pages
 * dirty and invalidates translated code, and only when the mapping is RAM
 * we accept (map never dispatches for a write; a refused mapping is
 * unmapped with nothing written).
 */
static int vnpu_hal_dma_write(void *opaque, uint64_t addr, const void *buf,
                              uint64_t len)
{
    VnpuState *s = opaque;
    AddressSpace *as = pci_get_address_space(&s->parent_obj);
    const MemTxAttrs attrs = { .memory = 1 };
    const uint8_t *p = buf;

    dma_barrier(as, DMA_DIRECTION_FROM_DEVICE);
    while (len) {
        hwaddr l = len;
        ram_addr_t offset;
        void *host = address_space_map(as, addr, &l, true, attrs);
        MemoryRegion *mr;

        if (!host) {
            vnpu_dma_refused(addr, len, "write");
            return -1;
        }
        mr = memory_region_from_host(host, &offset);
        if (!l || !vnpu_dma_target_ok(mr)) {
            address_space_unmap(as, host, l, true, 0);
            vnpu_dma_refused(addr, len, "write");
            return -1;
        }
        memcpy(host, p, l);
        address_space_unmap(as, host, l, true, l);
        addr += l;
        p += l;
        len -= l;
    }
    return 0;
}

static void vnpu_deliver(VnpuState *s, uint32_t vectors);

/*
 * Any thread. With the BQL (a vCPU's register write ran short commands,
 * or the deterministic bottom half): delivered at once. A simulator thread
 * must never wait for the BQL (see vnpu_dma_target_ok): from there the
 * vector is recorded and delivered by a bottom half in the main loop.
 */
static void vnpu_hal_irq(void *opaque, unsigned vector)
{
    VnpuState *s = opaque;

    if (vector >= 32) {
        return;
    }
    if (bql_locked()) {
        vnpu_deliver(s, 1u << vector);
        return;
    }
    qatomic_or(&s->pending_vectors, 1u << vector);
    qemu_bh_schedule(s->irq_bh);
}

static uint64_t vnpu_hal_clock_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void vnpu_hal_log(void *opaque, const char *msg)
{
    qemu_log_mask(LOG_GUEST_ERROR, "vnpu: %s\n", msg);
}

static const struct vnpu_sim_hal vnpu_hal_template = {
    .dma_read = vnpu_hal_dma_read,
    .dma_write = vnpu_hal_dma_write,
    .irq = vnpu_hal_irq,
    .clock_ns = vnpu_hal_clock_ns,
    .log = vnpu_hal_log,
    .thread_start = vnpu_hal_thread_start,
    .thread_exit = vnpu_hal_thread_exit,
};

/* ---- interrupts (main loop, BQL) ------------------------------------------ */

static void vnpu_update_intx(VnpuState *s)
{
    PCIDevice *pdev = &s->parent_obj;

    if (!s->sim) {
        return; /* realize failed or the device is being removed */
    }
    if (msix_enabled(pdev)) {
        pci_set_irq(pdev, 0);
        return;
    }
    pci_set_irq(pdev, vnpu_sim_irq_level(s->sim));
}

static void vnpu_deliver(VnpuState *s, uint32_t vectors)
{
    PCIDevice *pdev = &s->parent_obj;

    if (msix_enabled(pdev)) {
        unsigned nvec = VNPU_MSIX_VECTORS(s->num_queues);

        for (unsigned v = 0; v < nvec; v++) {
            if (vectors & (1u << v)) {
                msix_notify(pdev, v);
            }
        }
    }
    vnpu_update_intx(s);
}

static void vnpu_irq_bh(void *opaque)
{
    VnpuState *s = opaque;

    vnpu_deliver(s, qatomic_xchg(&s->pending_vectors, 0));
}

/* ---- deterministic execution (main loop, BQL) ----------------------------- */

static bool vnpu_any_queue_waiting(VnpuState *s)
{
    for (unsigned q = 0; q < s->num_queues; q++) {
        uint32_t st = vnpu_sim_reg_read(s->sim,
                                        VNPU_QUEUE_REG(q, VNPU_Q_STATUS));
        if (st & VNPU_Q_STATUS_WAITING) {
            return true;
        }
    }
    return false;
}

static void vnpu_run_bh(void *opaque)
{
    VnpuState *s = opaque;
    int64_t end = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + VNPU_RUN_SLICE_NS;

    while (vnpu_sim_step(s->sim) &&
           qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < end) {
        /* one step (a DMA chunk, a kernel block...) at a time until the
         * slice is used */
    }
    if (!vnpu_sim_idle(s->sim)) {
        /* More to do: yield to the main loop, then continue. */
        qemu_bh_schedule(s->run_bh);
    } else if (vnpu_any_queue_waiting(s)) {
        if (!timer_pending(s->fence_timer)) {
            timer_mod(s->fence_timer,
                      qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                      VNPU_FENCE_POLL_NS);
        }
    }
    vnpu_update_intx(s);
}

static void vnpu_fence_poll(void *opaque)
{
    VnpuState *s = opaque;

    qemu_bh_schedule(s->run_bh);
}

/* ---- BAR0 ----------------------------------------------------------------- */

static uint64_t vnpu_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    VnpuState *s = opaque;

    if (size != 4) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "vnpu: %u-byte read at 0x%" HWADDR_PRIx
                      " (registers are 32-bit)\n", size, addr);
        return 0;
    }
    if (!s->sim) {
        return 0;
    }
    return vnpu_sim_reg_read(s->sim, addr);
}

static void vnpu_regs_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    VnpuState *s = opaque;

    if (size != 4) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "vnpu: %u-byte write at 0x%" HWADDR_PRIx
                      " (registers are 32-bit)\n", size, addr);
        return;
    }
    if (!s->sim) {
        return;
    }
    vnpu_sim_reg_write(s->sim, addr, val);
    if (s->deterministic) {
        qemu_bh_schedule(s->run_bh);
    }
    vnpu_update_intx(s);
}

static const MemoryRegionOps vnpu_regs_ops = {
    .read = vnpu_regs_read,
    .write = vnpu_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/* ---- reset ---------------------------------------------------------------- */

/*
 * System reset and FLR (pci_device_reset -> device_cold_reset) land here.
 * The simulator's reset cancels the commands in flight and waits until its
 * command processor and cores are idle - milliseconds at most, with the BQL
 * held, which none of its threads needs; nothing they started is written
 * afterwards. Interrupts signalled before that are dropped here.
 */
static void vnpu_reset_hold(Object *obj, ResetType type)
{
    VnpuState *s = VNPU(obj);

    if (!s->sim) {
        return;
    }
    qemu_bh_cancel(s->run_bh);
    timer_del(s->fence_timer);
    vnpu_sim_reset(s->sim);
    qemu_bh_cancel(s->irq_bh);
    qatomic_set(&s->pending_vectors, 0);
    pci_set_irq(&s->parent_obj, 0);
}

static void vnpu_config_write(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    pci_default_write_config(pdev, addr, val, len);
    pcie_cap_flr_write_config(pdev, addr, val, len);
    if (range_covers_byte(addr, len, PCI_COMMAND) ||
        ranges_overlap(addr, len, pdev->msix_cap, MSIX_CAP_LENGTH)) {
        /* INTx follows MSI-X enable and the INTx disable bit. */
        vnpu_update_intx(VNPU(pdev));
    }
}

/* ---- realize / unrealize -------------------------------------------------- */

static void vnpu_free_resources(VnpuState *s)
{
    PCIDevice *pdev = &s->parent_obj;

    /* Joins every simulator thread: nothing schedules the BHs afterwards. */
    vnpu_sim_destroy(s->sim);
    s->sim = NULL;
    if (s->fence_timer) {
        timer_free(s->fence_timer);
        s->fence_timer = NULL;
    }
    if (s->run_bh) {
        qemu_bh_delete(s->run_bh);
        s->run_bh = NULL;
    }
    if (s->irq_bh) {
        qemu_bh_delete(s->irq_bh);
        s->irq_bh = NULL;
    }
    migrate_del_blocker(&s->migration_blocker);
    if (s->msix_ok) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        s->msix_ok = false;
    }
}

static bool vnpu_check_properties(VnpuState *s, Error **errp)
{
    if (!s->exec_mode || !strcmp(s->exec_mode, "threads")) {
        s->deterministic = false;
    } else if (!strcmp(s->exec_mode, "deterministic")) {
        s->deterministic = true;
    } else {
        error_setg(errp, "vnpu: exec-mode must be 'threads' or "
                   "'deterministic', not '%s'", s->exec_mode);
        return false;
    }
    if (!is_power_of_2(s->vram_size) || s->vram_size < VNPU_VRAM_SIZE_MIN ||
        s->vram_size > VNPU_VRAM_SIZE_MAX) {
        error_setg(errp, "vnpu: vram-size must be a power of two between "
                   "1 MiB and 64 GiB, not %" PRIu64, s->vram_size);
        return false;
    }
    if (s->num_queues < 1 || s->num_queues > VNPU_MAX_QUEUES) {
        error_setg(errp, "vnpu: queues must be 1..%u", VNPU_MAX_QUEUES);
        return false;
    }
    if (s->num_contexts < 1 || s->num_contexts > VNPU_MAX_CONTEXTS) {
        error_setg(errp, "vnpu: contexts must be 1..%u", VNPU_MAX_CONTEXTS);
        return false;
    }
    if (s->num_cores < 1 || s->num_cores > VNPU_MAX_CORES) {
        error_setg(errp, "vnpu: cores must be 1..%u", VNPU_MAX_CORES);
        return false;
    }
    return true;
}

static void vnpu_realize(PCIDevice *pdev, Error **errp)
{
    VnpuState *s = VNPU(pdev);
    unsigned nvec;
    struct vnpu_sim_config cfg;
    struct vnpu_sim_hal hal = vnpu_hal_template;
    int ret;

    if (!vnpu_check_properties(s, errp)) {
        return;
    }
    nvec = VNPU_MSIX_VECTORS(s->num_queues);

    pci_config_set_interrupt_pin(pdev->config, 1);

    memory_region_init_io(&s->regs, OBJECT(s), &vnpu_regs_ops, s,
                          "vnpu-regs", VNPU_REGS_SIZE);
    pci_register_bar(pdev, VNPU_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);

    if (!memory_region_init_ram(&s->vram, OBJECT(s), "vnpu-vram",
                                s->vram_size, errp)) {
        return;
    }
    pci_register_bar(pdev, VNPU_BAR_VRAM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->vram);

    ret = pcie_endpoint_cap_init(pdev, VNPU_PCIE_CAP_OFFSET);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "vnpu: cannot add the PCIe capability");
        return;
    }
    pcie_cap_flr_init(pdev);

    ret = msix_init_exclusive_bar(pdev, nvec, VNPU_BAR_MSIX, NULL);
    if (ret == 0) {
        s->msix_ok = true;
        for (unsigned v = 0; v < nvec; v++) {
            msix_vector_use(pdev, v);
        }
    } else if (ret != -ENOTSUP) {
        error_setg_errno(errp, -ret, "vnpu: cannot set up MSI-X");
        return;
    }
    /* Without MSI-X (-ENOTSUP: no MSI on this machine) the device uses INTx. */

    s->irq_bh = qemu_bh_new_guarded(vnpu_irq_bh, s,
                                    &DEVICE(s)->mem_reentrancy_guard);
    s->run_bh = qemu_bh_new_guarded(vnpu_run_bh, s,
                                    &DEVICE(s)->mem_reentrancy_guard);
    s->fence_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, vnpu_fence_poll, s);

    cfg = (struct vnpu_sim_config) {
        .vram = memory_region_get_ram_ptr(&s->vram),
        .vram_size = s->vram_size,
        .num_queues = s->num_queues,
        .num_contexts = s->num_contexts,
        .num_cores = s->num_cores,
        .mode = s->deterministic ? VNPU_SIM_DETERMINISTIC : VNPU_SIM_THREADS,
        .test_mode = s->test_mode,
        /* hal.irq may run inside a BAR0 write: it delivers at once there */
        .doorbell_runs_short = true,
    };
    hal.opaque = s;
    ret = vnpu_sim_create(&cfg, &hal, &s->sim);
    if (ret) {
        error_setg_errno(errp, -ret, "vnpu: cannot create the simulator");
        vnpu_free_resources(s);
        return;
    }

    /*
     * The simulator's threads and in-flight commands cannot be saved yet:
     * a migrated VM would lose work in progress.
     */
    error_setg(&s->migration_blocker, "vnpu: migration is not supported: "
               "commands in flight on the simulator cannot be saved");
    if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        vnpu_free_resources(s);
    }
}

static void vnpu_exit(PCIDevice *pdev)
{
    vnpu_free_resources(VNPU(pdev));
}

/* ---- QOM ------------------------------------------------------------------ */

static const Property vnpu_properties[] = {
    DEFINE_PROP_SIZE("vram-size", VnpuState, vram_size, 256 * MiB),
    DEFINE_PROP_UINT32("queues", VnpuState, num_queues, 4),
    DEFINE_PROP_UINT32("contexts", VnpuState, num_contexts, 16),
    DEFINE_PROP_UINT32("cores", VnpuState, num_cores, 2),
    DEFINE_PROP_STRING("exec-mode", VnpuState, exec_mode),
    DEFINE_PROP_BOOL("test-mode", VnpuState, test_mode, false),
};

static void vnpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = vnpu_realize;
    pc->exit = vnpu_exit;
    pc->config_write = vnpu_config_write;
    pc->vendor_id = VNPU_PCI_VENDOR_ID;
    pc->device_id = VNPU_PCI_DEVICE_ID;
    pc->revision = VNPU_PCI_REVISION;
    pc->class_id = VNPU_PCI_CLASS;
    rc->phases.hold = vnpu_reset_hold;
    dc->desc = "vnpu neural processing unit (firmware simulator)";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    device_class_set_props(dc, vnpu_properties);
    object_class_property_set_description(klass, "vram-size",
        "VRAM (BAR4) size: a power of two, 1M..64G");
    object_class_property_set_description(klass, "queues",
        "command queues, 1..16; MSI-X vectors = 1 + queues");
    object_class_property_set_description(klass, "contexts",
        "MMU contexts, 1..64");
    object_class_property_set_description(klass, "cores",
        "simulated cores: blocks run at once (threads mode: cores + 1 "
        "device threads), 1..64");
    object_class_property_set_description(klass, "exec-mode",
        "threads (default: command processor and cores on their own "
        "threads) or deterministic (main-loop bottom half)");
    object_class_property_set_description(klass, "test-mode",
        "allow hang, fault and fatal injection (TEST_INJECT)");
}

static const TypeInfo vnpu_types[] = {
    {
        .name = TYPE_VNPU,
        .parent = TYPE_PCI_DEVICE,
        .instance_size = sizeof(VnpuState),
        .class_init = vnpu_class_init,
        .interfaces = (InterfaceInfo[]) {
            { INTERFACE_PCIE_DEVICE },
            { }
        },
    },
};

DEFINE_TYPES(vnpu_types)
