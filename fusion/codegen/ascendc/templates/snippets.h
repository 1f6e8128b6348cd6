// Small C++ fragments the emitters put into the kernel templates' slots, one per section
// (cxx.snippet): a section starts at a line "//@ NAME" and runs to the next one.
//@ RES_GM_DECL
    GlobalTensor<T> resGm;
//@ RES_GM_SET
        resGm.SetGlobalBuffer((__gm__ T*)res, t.batch * t.co1 * t.oh * t.ow * C0);
//@ RES_EPI_ADD
        Axpy(acc, r, static_cast<T>(1), static_cast<int32_t>(thw * C0));  // + residual, after act2
//@ RES_EPI_DEQ
        LocalTensor<T> resT = resQue.DeQue<T>();
//@ RES_FREE
        resQue.FreeTensor(resT);
//@ RES_FREE_TP
                resQue.FreeTensor(resT);
//@ B_PW_SET
        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);
//@ B_PW_FREE
        bPwQue.FreeTensor(bPw);
//@ B_PW_L1_FREE
        bPwL1Que.FreeTensor(bPwL1);
//@ B_PW_DECL
    GlobalTensor<float> bPwGm;
    LocalTensor<float> bPw;
//@ B_PW_L1_DECL
    GlobalTensor<float> bPwGm;
    LocalTensor<float> bPwL1;
//@ FINISH_NONE
        (void)k;
        (void)mine;
//@ PRE_SET
        preGm.SetGlobalBuffer(usr + PreOffset(), t.nTiles * t.co1 * thw * C0);
//@ PRE_DECL
    GlobalTensor<T> preGm;
//@ B_IN_STREAM
                // B: per output block its kbq FRACTAL_Z fractals (contiguous in GM)
                LocalTensor<T> b1 = bL1Que.AllocTensor<T>();
                DataCopy(b1, wPwGm[(o0 * tl.c1 + k0) * C0 * C0],
                         DataCopyParams(static_cast<uint16_t>(cbo), static_cast<uint16_t>(kbq * C0 * PB),
                                        static_cast<uint16_t>((tl.c1 - kbq) * C0 * PB), 0));
                bL1Que.EnQue(b1);
                b1 = bL1Que.DeQue<T>();
//@ B_FREE_STREAM
                bL1Que.FreeTensor(b1);
//@ EPI_TILE_F32
            LocalTensor<float> acc = yAccBuf.Get<float>();
            thw = rows;  // EpilogueBlock works on thw pixels: the GEMM tile's rows (phase 1 is over)
            LocalTensor<T> yT = yQue.AllocTensor<T>();
            for (uint32_t j = 0; j < cbo; ++j) {
                Cast(acc[j * rows * C0], pre[j * rows * C0], RoundMode::CAST_NONE, rows * C0);
                EpilogueBlock(acc[j * rows * C0], o0 + j, @TP_RES_ARG@yT[j * rows * C0]);
            }
//@ EPI_TILE_16
            // the fp16 pre-activation + bias into y, act2 and [+res] in the storage dtype (plan.epi_post16)
            LocalTensor<T> yT = yQue.AllocTensor<T>();
@EPI16_OPS@
//@ EPI16_OPS
            {   // yT = the pre-activation + b_pw16 per output block, act2, [+ residual]: storage dtype
                LocalTensor<T> bias = bPw16Buf.Get<T>();
                for (uint32_t j = 0; j < cbo; ++j)
                    AddBias16(yT[j * rows * C0], @EPI16_SRC@[j * rows * C0], bias[(o0 + j) * C0], rows);
@ACT2_16@@RES_ADD16@            }
//@ B_PW16
        Cast(bPw16Buf.Get<T>(), bPw, RoundMode::CAST_NONE, tl.co1 * C0);   // b_pw in the storage dtype (fp16 epilogue)
//@ RES_ADD16
                Add(yT, yT, resT, static_cast<int32_t>(cbo * rows * C0));   // + residual (storage dtype)
//@ B_RES_TAKE
        bRes = bResQue.DeQue<T>();  // this core's N tile of PW weights, loaded during phase 1
//@ B_RES_FREE
        bResQue.FreeTensor(bRes);
//@ TP_PRELOAD_DW
            if (k == 0) PreloadB(core);  // after the first x block: the MTE2 queue serves it first
//@ CHAIN_PREFETCH
        op.SetPrefetch(weights + @OFF@);  // its DW phase reads @BYTES@ B of @WHAT@'s PW weights ahead into L2
//@ TP_PREFETCH
            Prefetch(core, k, mine);  // a later chain member's weights into L2, after the x block (prefetch.py)
//@ TP_PRELOAD_IDLE
            PreloadB(core);  // a GEMM core without a DW unit: its PW weights at once (the SyncAll waits)
//@ TP_CALL
        @CALL@
//@ TP_RUN_PHASE
        if (k == @K@) {
            @CALL@
        }
//@ TP_SYNC_HARD
        SyncAll<false>();  // AIVs and AICs: @DONE@
//@ TP_SYNC_LOCAL
        PipeBarrier<PIPE_ALL>();  // local DW -> GEMM hand-off: this core's GEMM reads only DW rows it wrote (local_handoff.dw_local_ok)
//@ TP_SYNC_SOFT
        SyncAll(syncGm, syncUbBuf.Get<int32_t>());  // soft (its flags zeroed by the host): @DONE@
//@ A_IN_STREAM
                LocalTensor<T> a1 = aL1Que.AllocTensor<T>();
@A_LOAD@                aL1Que.EnQue(a1);
//@ A_DEQUE_STREAM
                a1 = aL1Que.DeQue<T>();
//@ A_FREE_STREAM
                aL1Que.FreeTensor(a1);
//@ A_RES_DECL
        LocalTensor<T> aRes;   // the kept A panel of the current M tile (twophase.a_keep)
        uint32_t aM0 = 0;
//@ A_PANEL
            if (i == 0 || m0 != aM0) {   // the core's first tile of an M tile: its A panel, all of K
                if (i > 0) aResQue.FreeTensor(aRes);   // the last M tile's tiles are issued
                aRes = aResQue.AllocTensor<T>();
                DataCopy(aRes, dwGm[m0 * C0],
                         DataCopyParams(static_cast<uint16_t>(tl.c1), static_cast<uint16_t>(rows * PB),
                                        static_cast<uint16_t>((tl.mAl - rows) * PB), 0));
                aResQue.EnQue(aRes);
                aRes = aResQue.DeQue<T>();
                aM0 = m0;
            }
//@ A_RES_FREE
        aResQue.FreeTensor(aRes);
//@ A_LOAD_WS
                // A: kbq channel blocks of the tile's rows from the workspace (one column block each)
                DataCopy(a1, dwGm[(k0 * tl.mAl + m0) * C0],
                         DataCopyParams(static_cast<uint16_t>(kbq), static_cast<uint16_t>(rows * PB),
                                        static_cast<uint16_t>((tl.mAl - rows) * PB), 0));
//@ A_LOAD_TILE
                // A: kbq channel blocks of DW tile t's pixels from the workspace, a run per tile row (tile_m)
                for (uint32_t q = 0; q < kbq; ++q)
                    DataCopy(a1[q * rows * C0], dwGm[((k0 + q) * tl.mAl + (n * tl.oh + oh0) * tl.ow + ow0) * C0],
                             DataCopyParams(static_cast<uint16_t>(ohv), static_cast<uint16_t>(owv * PB),
                                            static_cast<uint16_t>((tl.ow - owv) * PB), 0));
//@ A_LOAD_X
                // A straight from x (gemm_only): per channel block its rows, x's pitch being m pixels;
                // the last tile's pad rows read on past the block (slack after x: only dropped rows use them)
                for (uint32_t q = 0; q < kbq; ++q)
                    DataCopy(a1[q * rows * C0], dwGm[((k0 + q) * tl.m + m0) * C0], rows * C0);
//@ A_LOAD_X_IMAGES
                // A straight from x (gemm_only, several images): per channel block one run per image the
                // tile's rows touch, x's pitch being an image's pixels; the last image's run reads on
                // through the pad rows (slack after x: only dropped rows use them)
                for (uint32_t q = 0; q < kbq; ++q) {
                    for (uint32_t r = m0, ohw = tl.oh * tl.ow; r < m0 + rows;) {
                        const uint32_t img = RowImage(r, ohw);
                        const uint32_t end = img + 1 < tl.batch ? LoopMin(BlockStart(img + 1, ohw), m0 + rows) : m0 + rows;
                        DataCopy(a1[(q * rows + r - m0) * C0], dwGm[((img * tl.c1 + k0 + q) * ohw + r - img * ohw) * C0],
                                 (end - r) * C0);
                        r = end;
                    }
                }
//@ TASK_MIX_1_2
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per block: 1 AIC (GEMM) + 2 AIVs (DW, epilogue)
//@ TASK_AIV_ONLY
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // a vector-core (AIV) kernel
//@ COPIES_CONST
constexpr uint32_t @CNAME@Copies = @COPIES@;   // @BUF@ @SCOPE@ @DTYPE@: @ROLE@
//@ TILING_FIELD
    uint32_t @NAME@;
//@ DW_BIAS16
        Cast(bDw16Buf.Get<T>(), bDw, RoundMode::CAST_NONE, tl.c1 * C0);   // b_dw in the storage dtype (fp16 post-ops)
//@ ACT16_RELU
@PAD@Relu(@T@, @T@, static_cast<int32_t>(@N@));
//@ ACT16_RELU6
@PAD@Maxs(@T@, @T@, static_cast<T>(0), static_cast<int32_t>(@N@));
@PAD@Mins(@T@, @T@, static_cast<T>(6), static_cast<int32_t>(@N@));
//@ GROUPED_ACT1_RELU
            Relu(d, d, lanes, reps, act);
//@ GROUPED_ACT1_RELU6
            Maxs(d, d, static_cast<T>(0), lanes, reps, act);
            Mins(d, d, static_cast<T>(6), lanes, reps, act);
//@ X_CLIP
        Mins(x, x, static_cast<T>(@X_MAX@f), cb * tl.ih * tl.iw * C0);   // the producer's clip, deferred (chain)
//@ DW_ACC_DECL
        LocalTensor<float> acc = dwAccBuf.Get<float>();
//@ W_LOAD_L1
DataCopy(wp, wPwGm, tl.co1 * tl.c1 * C0 * C0);   // FRACTAL_Z is the layout L1 holds B in
//@ W_LOAD_UB
LoadPwWeights(wp, 0, tl.co1);
//@ CHAIN_SYNC_ALL
    SyncAll<false>();  // AIVs and AICs: this block's output is in GM before the next reads it
//@ CHAIN_WAVE_STEP
    {   // step @S@: @WHAT@
@TASKS@    }
//@ CHAIN_WAVE_SYNC
    SyncAll<false>();  // AIVs and AICs: this step's DW results and outputs are in GM before the next step reads them
//@ CHAIN_WAVE_LOCAL
        if ASCEND_IS_@ROLE@ {   // the next GEMM stage reads only rows this core wrote (its writes land first)
            PipeBarrier<PIPE_ALL>();
        }
//@ CHAIN_WAVE_AIC_BARRIER
        if ASCEND_IS_AIC {   // every AIC: the rows the next GEMM stage reads, other AICs' Fixpipe output, are in GM
            PipeBarrier<PIPE_ALL>();
            CrossCoreSetFlag<0, PIPE_FIX>(@FLAG@);
            CrossCoreWaitFlag(@FLAG@);
        }
//@ CHAIN_LOCAL
    PipeBarrier<PIPE_ALL>();  // the next GEMM stage reads only rows this core wrote (its writes land first): no SyncAll
//@ CHAIN_SYNC_ALL_SOFT
    {   // soft SyncAll (310P): this block's output is in GM before the next reads it; the chain's
        // flags (zeroed by the host) count every boundary, a small TPipe lends the UB it polls into
        TPipe syncPipe;
        TBuf<TPosition::VECCALC> syncUb;
        syncPipe.InitBuffer(syncUb, @SYNC_BYTES@);
        GlobalTensor<int32_t> syncGm;
        syncGm.SetGlobalBuffer((__gm__ int32_t*)(ws + @SYNC_OFF@), @SYNC_BYTES@ / sizeof(int32_t));
        SyncAll(syncGm, syncUb.Get<int32_t>());
    }
//@ ACT_FN
    __aicore__ inline void @FN@(const LocalTensor<float>& a, int32_t n, const LocalTensor<float>& tmp, int32_t tmpLen)
    {
        (void)tmp;
        (void)tmpLen;
        @BODY@
    }
//@ ACT_FN_PER_CHANNEL
    __aicore__ inline void @FN@(const LocalTensor<float>&, int32_t, const LocalTensor<float>&, int32_t) {}  // @ACT@: per channel block, after the bias add
//@ HOST_TILING_LINE
    t.@NAME@ = @VALUE@;
//@ HOST_ZERO_SYNC
        CHECK_ACL(aclrtMemsetAsync(static_cast<uint8_t*>(workspace) + @OFFSET@, @BYTES@, 0, @BYTES@, stream));  // SyncAll flags start at 0
//@ HOST_LAUNCH
        ACLRT_LAUNCH_KERNEL(@SYMBOL@)(@BLOCK_DIM@, stream, @DEV_ARGS@, workspace, tilingDev);
//@ LOOP_FN
// @FORMULA@
__aicore__ inline int32_t @NAME@(@PARAMS@) { return @EXPR@; }
//@ LOOP_MINMAX
__aicore__ inline int32_t LoopMin(int32_t a, int32_t b) { return a < b ? a : b; }
__aicore__ inline int32_t LoopMax(int32_t a, int32_t b) { return a > b ? a : b; }
//@ EPI16_OPS_CUBE_BIAS
            {   // (plan.bias_in_cube: the cube added b_pw, the move applied relu) act2, [+ residual]
@ACT2_16@@RES_ADD16@            }
//@ ACT16_RELU6_AFTER_RELU
@PAD@Mins(@T@, @T@, static_cast<T>(6), static_cast<int32_t>(@N@));   // relu6: max(., 0) was the move's
//@ BIAS_SETUP
        {   // the PW bias through the cube (plan.bias_in_cube): its B fractals zeroed in L1, row 0
            // of each the fp16 bias; the A operand all ones in L0A (InitConstValue: 512 B a repeat)
            LocalTensor<T> bl1 = biasL1Buf.Get<T>();
            LocalTensor<T> ones = onesL0Buf.Get<T>();
            for (uint32_t r0 = 0; r0 < tl.co1; r0 += MAX_REPEAT)
                InitConstValue(bl1[r0 * C0 * C0], InitConstValueParams<T>(
                    static_cast<uint16_t>(tl.co1 - r0 < MAX_REPEAT ? tl.co1 - r0 : MAX_REPEAT), 0, 0, static_cast<T>(0)));
            for (uint32_t r0 = 0; r0 < @ONES_ROWS@ / 16; r0 += MAX_REPEAT)
                InitConstValue(ones[r0 * 16 * C0], InitConstValueParams<T>(
                    static_cast<uint16_t>(@ONES_ROWS@ / 16 - r0 < MAX_REPEAT ? @ONES_ROWS@ / 16 - r0 : MAX_REPEAT), 0, 0,
                    static_cast<T>(1)));
            PipeBarrier<PIPE_ALL>();  // b_pw16's Cast and the fills are done (the fills' pipe is not documented)
            DataCopyParams p;
            p.blockCount = tl.co1;
            p.blockLen = 1;   // one 32 B row: 16 channels of bias
            p.srcGap = 0;
            p.dstGap = 15;    // the other 15 rows of each 512 B fractal stay zero
            DataCopy(bl1, bPw16Buf.Get<T>(), p);   // UB -> L1 (MTE3)
            SetFlag<HardEvent::MTE3_MTE1>(0);     // L1 holds the bias before its first LoadData
            WaitFlag<HardEvent::MTE3_MTE1>(0);
        }
//@ BIAS_MMAD
        {   // + b_pw (plan.bias_in_cube): C += ones (M x 16) x the co-step's bias fractals (16 x cbo*16)
            LocalTensor<T> bb = biasL0Que.AllocTensor<T>();
            LoadData(bb, biasL1Buf.Get<T>(), LoadData2DParams(o0, cbo, 1, 0, 0, true, 0));
            biasL0Que.EnQue(bb);
            bb = biasL0Que.DeQue<T>();
            MmadParams bp;
            bp.m = @BIAS_M@;
            bp.n = cbo * C0;
            bp.k = C0;
            bp.cmatrixInitVal = false;   // accumulate onto the GEMM's C
            Mmad(c, onesL0Buf.Get<T>(), bb, bp);
            biasL0Que.FreeTensor(bb);
        }
//@ L0C_TO_Y16
@PAD@DataCopyParams p;
@PAD@p.blockCount = 1;
@PAD@p.blockLen = @FRACTALS@;  // 16x16 fractals of one output block
@PAD@p.srcGap = 0;
@PAD@p.dstGap = 0;
@PAD@DataCopyEnhancedParams e;
@PAD@e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
@PAD@e.isRelu = @MOVE_RELU@;   // (plan.bias_in_cube: act2's max(., 0) on the way)
@PAD@for (uint32_t j = 0; j < cbo; ++j) DataCopy(yT[j * @Y_ROWS@ * C0], c[j * @C_ROWS@ * C0], p, e);
//@ TP_SE_GM_DECL
    GlobalTensor<float> seW1Gm, seB1Gm, seW2Gm, seB2Gm, seWsGm;   // squeeze-and-excitation operands, se_ws
//@ TP_SE_CALL
            SeSums(q);
//@ SE_ROW_HALF
                Cast(acc[i * owv * C0], dwOut[(c * tl.th + i) * tl.dwPitch * C0], RoundMode::CAST_NONE, owv * C0);
//@ SE_ROW_FLOAT
                Adds(acc[i * owv * C0], dwOut[(c * tl.th + i) * tl.dwPitch * C0], 0.0f, static_cast<int32_t>(owv * C0));
//@ SE_SCALE16
            Cast(seScale16Buf.Get<T>(), scale, RoundMode::CAST_NONE, ch);   // the scales in the storage dtype
//@ SE_MUL_HALF
                    MulScale16(tile, seScale16Buf.Get<T>()[b * C0], pc);
//@ SE_MUL_FLOAT
                    MulScaleHalves(tile, scale[b * C0], pc);
//@ SE_GATE_SIGMOID
    // 1 / (1 + exp(-x))
    __aicore__ inline void SeGate(const LocalTensor<float>& a, int32_t n)
    {
        Muls(a, a, -1.0f, n);
        Exp(a, a, n);
        Adds(a, a, 1.0f, n);
        Reciprocal(a, a, n);
    }
//@ SE_GATE_ACT
    __aicore__ inline void SeGate(const LocalTensor<float>& a, int32_t n)
    {
        @BODY@
    }
//@ LN_WIDEN_HALF
            Cast(a, io, RoundMode::CAST_NONE, static_cast<int32_t>(n));   // the storage dtype -> fp32
//@ LN_NARROW_HALF
            Cast(io, a, RoundMode::CAST_NONE, static_cast<int32_t>(n));   // fp32 -> the storage dtype
//@ LN_IO_HALF
        LocalTensor<T> io = lnIoBuf.Get<T>();
//@ LN_IO_FLOAT
        LocalTensor<T> io = a;   // fp32: the copies land in ln_x itself
//@ TP_EYE_MAKE
        if (core == 0) MakeEye();  // the residual GEMM's identity, before the units (visible after the SyncAll)
//@ TP_EYE_GM
        eyeGm.SetGlobalBuffer((__gm__ T*)(usr + t.wsSync@WS_SE@ + t.c1 * t.mAl * C0 * sizeof(T) + t.wsPre), C0 * C0);
//@ TP_EYE_DECL
    GlobalTensor<T> eyeGm;
    LocalTensor<T> eye;
//@ TP_EYE_LOAD
        {   // the residual GEMM's identity (written by DW core 0 before the SyncAll): -> L1 -> L0B, resident
            LocalTensor<T> e1 = eyeL1Que.AllocTensor<T>();
            DataCopy(e1, eyeGm, C0 * C0);
            eyeL1Que.EnQue(e1);
            e1 = eyeL1Que.DeQue<T>();
            eye = eyeL0Que.AllocTensor<T>();
            LoadData(eye, e1, LoadData2DParams(0, 1, 0, 0, 0, true, 0));
            eyeL0Que.EnQue(eye);
            eye = eyeL0Que.DeQue<T>();
            eyeL1Que.FreeTensor(e1);
        }
//@ TP_EYE_FREE
        eyeL0Que.FreeTensor(eye);
//@ TP_AHEAD_MEMBERS
    GlobalTensor<T> aheadGm;   // the next block's resident PW weights, loaded beside this task (twophase_ahead.h)
    LocalTensor<T> aheadL1;
    uint32_t aheadN = 0;
    uint32_t aheadDone = 0;
    bool aheadOn = false;
//@ TP_L1_REGION_MEMBER
    TBuf<TPosition::A1> @BUF@;   // L1 @WHERE@ this block's buffers (schedules/wave.ahead_layout)
//@ TP_L1_REGION_INIT
        pipe.InitBuffer(@BUF@, @BYTES@);   // L1 @WHERE@ this block's buffers (a chain in image chunks)
//@ TP_AHEAD_PIECE
            if (aheadOn) AheadPiece(i, mine);   // the next block's weights: a piece after each tile (twophase_ahead.h)
//@ CHAIN_AHEAD
op.SetAhead(weights + @W_PW@, @M_TILES@, @CO_STEPS@, @CORES@, @COB@, @CO1@, @C1@, @OFF@);   // block @NEXT@'s resident PW weights, beside this task (into L1 @REGION@)
